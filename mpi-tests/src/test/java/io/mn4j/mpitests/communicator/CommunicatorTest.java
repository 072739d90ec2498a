package io.mn4j.mpitests.communicator;

import io.mn4j.communicator.TensorExchangeSuite;
import io.mn4j.mpitests.LauncherMalloc;
import io.mn4j.mpitests.MpiSuiteTests;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/**
 * The Communicator under real {@code mpirun} with 1, 2, 3 and 4 ranks: one launch per suite and
 * rank count, one JUnit test per scenario. Point to point and the collectives run at 2 and 4 ranks
 * with the launcher's malloc settings, at 1 and 3 with glibc's defaults, so that both ways of
 * keeping received tensors' memory (with and without the pool) see every scenario.
 */
class CommunicatorTest {
    private static final long TIMEOUT_SECONDS = 180;

    @TestFactory
    Stream<DynamicNode> pointToPoint() {
        return Stream.concat(MpiSuiteTests.forRanks(P2pSuite.class, TIMEOUT_SECONDS, LauncherMalloc.GLIBC_DEFAULTS, 1, 3),
                MpiSuiteTests.forRanks(P2pSuite.class, TIMEOUT_SECONDS, LauncherMalloc.env(), 2, 4));
    }

    @TestFactory
    Stream<DynamicNode> collectives() {
        return Stream.concat(MpiSuiteTests.forRanks(CollectiveSuite.class, TIMEOUT_SECONDS, LauncherMalloc.GLIBC_DEFAULTS, 1, 3),
                MpiSuiteTests.forRanks(CollectiveSuite.class, TIMEOUT_SECONDS, LauncherMalloc.env(), 2, 4));
    }

    @TestFactory
    Stream<DynamicNode> groupsModelsAndCounters() {
        return MpiSuiteTests.forRanks(GroupSuite.class, TIMEOUT_SECONDS, 1, 2, 3, 4);
    }

    /**
     * Nothing left behind by any operation, under the launcher's malloc settings: freed memory
     * stays mapped there, so memory that is never freed shows as growth.
     */
    @TestFactory
    Stream<DynamicNode> memory() {
        return MpiSuiteTests.forRanks(MemorySuite.class, TIMEOUT_SECONDS, LauncherMalloc.env(), 1, 2, 3, 4);
    }

    /** TensorExchange receiving a message it cannot take (needs two ranks; four to have bystanders). */
    @TestFactory
    Stream<DynamicNode> exchangeFailures() {
        return MpiSuiteTests.forRanks(TensorExchangeSuite.class, TIMEOUT_SECONDS, 2, 4);
    }
}
