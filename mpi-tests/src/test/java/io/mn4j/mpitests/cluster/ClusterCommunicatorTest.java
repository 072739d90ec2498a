package io.mn4j.mpitests.cluster;

import io.mn4j.mpitests.LauncherMalloc;
import io.mn4j.mpitests.MpiSuiteTests;
import io.mn4j.mpitests.SimulatedCluster;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The Communicator and the differentiable functions across two hosts, over TCP between them and
 * shared memory within each: the one-host suites (every operation and dtype, zero-size and 0-d
 * tensors, per-rank shapes, chunked messages, nonblocking overlap; the functions' pipelines and
 * gradients against one process) and {@link ClusterSuite}'s checks of the layout, in one launch
 * on 2 + 2 ranks and one on 2 + 1.
 */
class ClusterCommunicatorTest {
    private static final long TIMEOUT_SECONDS = 600;

    @RegisterExtension
    static final ClusterHosts CLUSTER = new ClusterHosts("c", 2);

    @TestFactory
    Stream<DynamicNode> everyOperationAcrossHosts() {
        return Stream.of(ClusterHosts.EVEN, ClusterHosts.UNEVEN).map(this::launch);
    }

    private DynamicNode launch(int[] slots) {
        SimulatedCluster c = CLUSTER.get();
        Map<String, String> env = new HashMap<>(LauncherMalloc.env());
        env.putAll(ClusterSuite.env(c, slots));
        return MpiSuiteTests.forLaunch(c.slots(slots), ClusterSuite.All.class, TIMEOUT_SECONDS, env, ClusterHosts.ranks(slots));
    }
}
