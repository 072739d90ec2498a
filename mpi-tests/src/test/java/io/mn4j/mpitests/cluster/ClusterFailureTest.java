package io.mn4j.mpitests.cluster;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.examples.TrainGnn;
import io.mn4j.mpitests.MpiLauncher;
import io.mn4j.mpitests.SimulatedCluster;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A host's processes killed (SIGKILL) in the middle of training: the job ends on every remaining
 * rank within 10 s, and its output names the lost host and its ranks (mpirun names the rank that
 * died; when the daemon died too, mn4j's ranks name every host's ranks as they end).
 */
class ClusterFailureTest {
    private static final double LIMIT_SECONDS = 10;
    /** Long enough for start-up on a loaded machine; the job would train far longer. */
    private static final long TIMEOUT_SECONDS = 240;

    @RegisterExtension
    static final ClusterHosts CLUSTER = new ClusterHosts("f", 2);

    @ParameterizedTest(name = "ranks only: {0}")
    @ValueSource(booleans = {true, false})
    void aHostKilledInTrainingEndsTheJob(boolean ranksOnly) throws Exception {
        SimulatedCluster c = CLUSTER.get();
        Path dir = SimulatedCluster.sharedDir("killed-");
        long[] killedAt = {0};
        MpiLauncher.Result r = MpiLauncher.run(c.slots(ClusterHosts.EVEN), 4, TrainGnn.class.getName(),
                List.of("--data", "cora", "--epochs", "1000000", "--no-progress", "--no-plot", "--out", dir.toString()), dir,
                TIMEOUT_SECONDS, Map.of(), job -> {
                    if (ClusterRuns.awaitEpoch(job, dir.resolve("mpirun.log"), 5)) {
                        killedAt[0] = System.nanoTime();
                        c.kill(1, ranksOnly);
                    }
                });
        long endedAt = System.nanoTime();
        assertTrue(killedAt[0] > 0, () -> "training never reached epoch 5:\n" + r.describe());
        assertFalse(r.timedOut(), () -> "the job hung after host 1 was killed:\n" + r.describe());
        assertNotEquals(0, r.exitCode(), r::describe);
        double seconds = (endedAt - killedAt[0]) / 1e9;
        assertTrue(seconds < LIMIT_SECONDS, () -> "the job took " + seconds + " s to end:\n" + r.describe());
        String status = c.require("status");
        assertTrue(status.lines().filter(l -> l.contains(" processes ")).allMatch(l -> l.matches(".*\\s0 processes .*")),
                () -> "processes left on the hosts:\n" + status + "\n" + r.describe());
        String host = c.hostName(1);
        if (ranksOnly) {
            assertTrue(r.output().matches("(?s).*process rank [23] with PID \\d+ on node " + host + " exited on signal 9.*"),
                    () -> "the output does not name the lost rank and host:\n" + r.describe());
        } else {
            assertTrue(r.output().contains("Remote daemon: ") && r.output().contains("on node " + host),
                    () -> "the output does not name the lost host:\n" + r.describe());
            // Open MPI names no rank of a lost daemon: the ranks left name every host's ranks.
            assertTrue(r.output().contains("the job's ranks: " + c.hostName(0) + ": ranks 0, 1; " + host + ": ranks 2, 3"),
                    () -> "the output does not say which ranks ran on the lost host:\n" + r.describe());
        }
    }
}
