package io.mn4j.mpitests.iterators;

import io.mn4j.mpitests.MpiSuiteTests;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/** The iterators suite under mpirun with 1, 2, 3 and 4 ranks. */
class IteratorsTest {
    @TestFactory
    Stream<DynamicNode> iterators() {
        return MpiSuiteTests.forRanks(IteratorsSuite.class, 180, 1, 2, 3, 4);
    }
}
