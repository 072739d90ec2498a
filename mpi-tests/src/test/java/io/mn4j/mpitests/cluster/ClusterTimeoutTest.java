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
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A host frozen (its ranks stopped with SIGSTOP) or cut off (its link down) in the middle of
 * training, which MPI over TCP would wait on for ever: with a communicator timeout of
 * {@link #TIMEOUT} s every rank ends soon after, and the report names the call that waited, its tag
 * or collective, and the ranks of the lost host as not answering.
 */
class ClusterTimeoutTest {
    private static final int TIMEOUT = 20; // well above a loaded 2-core machine's longest wait in a live SAR epoch (about 5 s seen)
    /** The timeout, a tick (a tenth of it), the roll call's grace (2 s and two ticks) and the abort, with room for a loaded machine. */
    private static final double LIMIT_SECONDS = TIMEOUT + 15;
    private static final long JOB_SECONDS = 240;
    /** A timeout's report: "rank 0 (host H): CALL has waited at least". */
    private static final Pattern REPORT = Pattern.compile(
            "rank [01] \\(host \\S+-h0\\): \\S.*(\\(its collective call \\d+\\)|, tag \\d+\\).*) has waited at least [\\d.]+ s, more than the timeout of "
                    + TIMEOUT + ".0 s");

    @RegisterExtension
    static final ClusterHosts CLUSTER = new ClusterHosts("o", 2);

    @AfterEach
    void restoreHostOne() {
        SimulatedCluster c = CLUSTER.get();
        c.link(1, true);
        c.kill(1, false); // the daemon of a host cut off outlives its job
        c.kill(0, false);
    }

    @Test
    void aFrozenHostEndsTheJob() throws Exception {
        SimulatedCluster c = CLUSTER.get();
        Frozen f = freezeInTraining(c, "stopped-", () -> c.signal(1, "STOP", true));
        assertFalse(f.result().timedOut(), () -> "the job hung after host 1's ranks were stopped:\n" + f.result().describe());
        assertNotEquals(0, f.result().exitCode(), f.result()::describe);
        assertTrue(f.seconds() < LIMIT_SECONDS, () -> "the job took " + f.seconds() + " s to end:\n" + f.result().describe());
        assertReportNamesTheCallAndHostOne(c, f.result());
    }

    /**
     * mpirun cannot reach the cut-off host's daemon and waits for it (for Open MPI's keepalive,
     * minutes); the ranks, on both sides, end within the limit, and the test ends mpirun then.
     */
    @Test
    void aHostCutOffEndsEveryRank() throws Exception {
        SimulatedCluster c = CLUSTER.get();
        Frozen f = freezeInTraining(c, "cut-", () -> c.link(1, false));
        assertTrue(f.seconds() < LIMIT_SECONDS, () -> "ranks still ran " + f.seconds() + " s after host 1's link went down:\n"
                + f.result().describe());
        assertReportNamesTheCallAndHostOne(c, f.result());
    }

    private static void assertReportNamesTheCallAndHostOne(SimulatedCluster c, MpiLauncher.Result r) {
        assertTrue(REPORT.matcher(r.output()).find(), () -> "no report naming the call and its tag or collective:\n" + r.describe());
        Pattern notAnswering = Pattern.compile("not answering within [\\d.]+ s \\(stopped, or cut off from this host\\): ranks 2, 3 \\(host "
                + Pattern.quote(c.hostName(1)) + "\\)");
        assertTrue(notAnswering.matcher(r.output()).find(), () -> "the report does not name host 1's ranks as not answering:\n" + r.describe());
    }

    /** A job and how long its ranks ran on after the freeze. */
    private record Frozen(MpiLauncher.Result result, double seconds) {
    }

    /**
     * Runs TrainGnn on 2 + 2 ranks with the timeout, runs {@code freeze} at epoch 5, and waits
     * until no rank runs on either host (or the job ends); then ends what is left of the job.
     */
    private static Frozen freezeInTraining(SimulatedCluster c, String prefix, Runnable freeze) throws Exception {
        Path dir = SimulatedCluster.sharedDir(prefix);
        long[] frozenAt = {0};
        long[] endedAt = {0};
        MpiLauncher.Result r = MpiLauncher.run(c.slots(ClusterHosts.EVEN), 4, TrainGnn.class.getName(),
                List.of("--data", "cora", "--epochs", "1000000", "--no-progress", "--no-plot", "--out", dir.toString()), dir,
                JOB_SECONDS, Map.of("MN4J_TIMEOUT", String.valueOf(TIMEOUT)), job -> {
                    if (!ClusterRuns.awaitEpoch(job, dir.resolve("mpirun.log"), 5)) {
                        return;
                    }
                    frozenAt[0] = System.nanoTime();
                    freeze.run();
                    endedAt[0] = awaitNoRanks(c, frozenAt[0] + (long) (3 * LIMIT_SECONDS * 1e9));
                    job.descendants().forEach(ProcessHandle::destroyForcibly);
                    job.destroyForcibly();
                });
        assertTrue(frozenAt[0] > 0, () -> "training never reached epoch 5:\n" + r.describe());
        double seconds = (endedAt[0] - frozenAt[0]) / 1e9;
        // the figure docs/measurements.md quotes, in the test report
        System.out.printf("%s: the last rank ended %.1f s after the freeze%n", prefix, seconds);
        return new Frozen(r, seconds);
    }

    /** When the last rank on any host ended (or {@code deadline} passed), in System.nanoTime(). */
    private static long awaitNoRanks(SimulatedCluster c, long deadline) {
        while (System.nanoTime() - deadline < 0) {
            if (c.javaProcesses(0).isEmpty() && c.javaProcesses(1).isEmpty()) {
                return System.nanoTime();
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        return System.nanoTime();
    }
}
