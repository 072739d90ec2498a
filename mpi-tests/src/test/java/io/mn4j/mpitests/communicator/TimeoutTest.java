package io.mn4j.mpitests.communicator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.mpitests.FailedJobs;
import io.mn4j.mpitests.MpiLauncher;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The communicator timeout on one host ({@link TimeoutMain}): a call that waits longer ends the
 * job soon after, every rank, with a report naming the call, its tag and the ranks it waits for
 * and what they do; a peer that is slow but within the timeout is waited for.
 */
class TimeoutTest {
    private static final long TIMEOUT_SECONDS = 120;
    private static final double TIMEOUT = 3;
    /** From the start of the wait: the timeout, the roll call's grace (at most 3 s) and the abort. */
    private static final double LIMIT_SECONDS = TIMEOUT + 8;

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "recv      | 2 | recv (rank 1 from rank 0, tag 7) has waited | the peer: rank 0 (host HOST), in no communicator call",
        "irecv     | 2 | waitFor of irecv (rank 1 from rank 0, tag 7) has waited | the peer: rank 0 (host HOST), in no communicator call",
        "allreduce | 3 | allreduce on the world communicator (its collective call 2) has waited | not arrived: rank 2 (host HOST), in no communicator call"})
    void aCallWaitingLongerThanTheTimeoutEndsTheJob(String mode, int ranks, String call, String others,
            @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path dir) throws Exception {
        MpiLauncher.Result r = MpiLauncher.run(ranks, TimeoutMain.class.getName(), List.of(dir.toString(), mode,
                String.valueOf(TIMEOUT)), dir, TIMEOUT_SECONDS);
        FailedJobs.assertEndedSoonAfterTheFailure(r, dir.resolve("waiting-at-millis"), System.currentTimeMillis(), LIMIT_SECONDS);
        String host = Files.readString(Path.of("/proc/sys/kernel/hostname")).strip(); // as MPI_Get_processor_name
        assertTrue(r.output().contains(call + " "), () -> "the report does not name the call:\n" + r.describe());
        assertTrue(r.output().contains("more than the timeout of 3.0 s"), () -> "the report does not give the timeout:\n" + r.describe());
        assertTrue(r.output().contains(others.replace("HOST", host)),
                () -> "the report does not say what the awaited rank does:\n" + r.describe());
        assertFalse(r.output().contains("that nobody sent") || r.output().contains("returned"), r::describe);
    }

    @Test
    void aSlowPeerWithinTheTimeoutIsWaitedFor(@TempDir(cleanup = CleanupMode.ON_SUCCESS) Path dir) throws Exception {
        double timeout = 2.5 * TimeoutMain.SLOW_MILLIS / 1000;
        MpiLauncher.Result r = MpiLauncher.run(3, TimeoutMain.class.getName(), List.of(dir.toString(), "slow",
                String.valueOf(timeout)), dir, TIMEOUT_SECONDS);
        assertFalse(r.timedOut(), () -> "the job hung:\n" + r.describe());
        assertEquals(0, r.exitCode(), () -> "a slow peer within the timeout ended the job:\n" + r.describe());
        for (int rank = 0; rank < 3; rank++) {
            int rk = rank;
            assertTrue(Files.exists(dir.resolve("rank-" + rank + ".ok")), () -> "rank " + rk + " got wrong values:\n" + r.describe());
        }
    }
}
