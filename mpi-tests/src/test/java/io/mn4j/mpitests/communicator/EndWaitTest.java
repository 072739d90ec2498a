package io.mn4j.mpitests.communicator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.mpitests.MpiLauncher;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The end of a job while a thread the program started is still inside a communicator call
 * ({@link EndWaitMain}): MPI is finalized only once the call has ended, and a call that does not
 * end fails the job, every rank, with the cause, instead of a crash or a hang in finalization.
 */
class EndWaitTest {
    private static final long TIMEOUT_SECONDS = 120;
    private static final double AFTER_END_LIMIT_SECONDS = 15;
    /** Three, so that a rank that neither sends nor receives ends its job beside the two that do. */
    private static final int RANKS = 3;

    @ParameterizedTest(name = "ended by {0}, the receive answered")
    @ValueSource(strings = {"run", "shutdown"})
    void aCallRunningWhenTheJobEndsIsWaitedFor(String ending, @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path dir)
            throws Exception {
        MpiLauncher.Result r = launch(dir, ending, "yes");
        assertEquals(0, r.exitCode(), () -> "the job failed:\n" + r.describe());
        assertTrue(Files.exists(dir.resolve("rank-0.ending")), () -> "rank 0 never ended its body:\n" + r.describe());
        Path received = dir.resolve("rank-0.received");
        assertTrue(Files.exists(received), () -> "the receiving thread got nothing:\n" + r.describe());
        assertEquals(EndWaitMain.RECEIVED, Files.readString(received), r::describe);
        assertTrue(r.output().contains("communicator call(s) run on other threads; waiting"),
                () -> "rank 0 did not say that it waits:\n" + r.describe());
    }

    @ParameterizedTest(name = "ended by {0}, a receive started after the end")
    @ValueSource(strings = {"run"})
    void aCallStartedAfterTheEndIsRefused(String ending, @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path dir) throws Exception {
        MpiLauncher.Result r = launch(dir, ending, "late");
        assertNotEquals(0, r.exitCode(), () -> "the job ended with 0:\n" + r.describe());
        assertEquals(EndWaitMain.RECEIVED, Files.readString(dir.resolve("rank-0.received")), r::describe);
        assertTrue(r.output().contains("no communicator call may start on rank 0 any more: the job's body returned"),
                () -> "the late call's refusal is missing:\n" + r.describe());
        assertFalse(r.output().contains("SIGSEGV"), () -> "a rank crashed:\n" + r.describe());
    }

    @ParameterizedTest(name = "ended by {0}, a communicator closed after the end")
    @ValueSource(strings = {"shutdown"})
    void aCommunicatorClosedAfterTheEndIsLeftToFinalization(String ending, @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path dir)
            throws Exception {
        MpiLauncher.Result r = launch(dir, ending, "close");
        assertEquals(0, r.exitCode(), () -> "the job failed:\n" + r.describe());
        for (int rank = 0; rank < RANKS; rank++) {
            assertTrue(Files.exists(dir.resolve("rank-" + rank + ".closed")), "rank " + rank + " did not close:\n" + r.describe());
        }
    }

    @ParameterizedTest(name = "ended by {0}, the receive never answered")
    @ValueSource(strings = {"run", "shutdown"})
    void aCallThatDoesNotEndFailsTheJob(String ending, @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path dir) throws Exception {
        MpiLauncher.Result r = launch(dir, ending, "no");
        long endedAt = System.currentTimeMillis();
        assertNotEquals(0, r.exitCode(), () -> "the job ended with 0:\n" + r.describe());
        assertFalse(Files.exists(dir.resolve("rank-0.received")), () -> "received although nothing was sent:\n" + r.describe());
        assertTrue(r.output().contains("rank 0 failed"), () -> "the failure does not name the rank:\n" + r.describe());
        assertTrue(r.output().contains("1 communicator call(s) still ran on other threads, and they did not end within 3 s"),
                () -> "the cause is missing:\n" + r.describe());
        double afterEnd = (endedAt - Long.parseLong(Files.readString(dir.resolve("rank-0.ending")).trim())) / 1000.0;
        assertTrue(afterEnd < AFTER_END_LIMIT_SECONDS, () -> "the job took " + afterEnd + " s to end:\n" + r.describe());
    }

    /** A launch of {@link EndWaitMain} on {@link #RANKS} ranks, which must not hang. */
    private static MpiLauncher.Result launch(Path dir, String ending, String answer) throws Exception {
        MpiLauncher.Result r = MpiLauncher.run(RANKS, EndWaitMain.class.getName(), List.of(dir.toString(), ending, answer),
                dir, TIMEOUT_SECONDS);
        assertFalse(r.timedOut(), () -> "the job hung:\n" + r.describe());
        return r;
    }
}
