package io.mn4j.mpitests.cluster;

import io.mn4j.mpitests.SimulatedCluster;
import java.util.Arrays;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A simulated cluster for one test class ({@code @RegisterExtension static}): made before its
 * first test under a name no other test run uses, torn down after its last (and by a shutdown hook
 * should the JVM end first). When the cluster cannot be made, every test of the class fails with
 * the script's message: CI must see it, not skip it.
 */
final class ClusterHosts implements BeforeAllCallback, AfterAllCallback {
    /** Two hosts with two ranks each. */
    static final int[] EVEN = {2, 2};
    /** Three ranks: two on host 0, one on host 1. */
    static final int[] UNEVEN = {2, 1};

    private final String tag;
    private final int hosts;
    private final String[] options;
    private SimulatedCluster cluster;

    /** @param tag a few letters that tell this class's cluster from the others of the run */
    ClusterHosts(String tag, int hosts, String... options) {
        this.tag = tag;
        this.hosts = hosts;
        this.options = options;
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        cluster = SimulatedCluster.up(SimulatedCluster.uniqueName(tag), hosts, options);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (cluster != null) {
            cluster.close();
        }
    }

    SimulatedCluster get() {
        return cluster;
    }

    /** Ranks of a layout. */
    static int ranks(int[] slots) {
        return Arrays.stream(slots).sum();
    }
}
