package io.mn4j.mpitests.communicator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.mpitests.FailedJobs;
import io.mn4j.mpitests.MpiLauncher;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * An uncaught exception on one rank ends the whole job, non-zero, with that rank's message, while
 * the other ranks are blocked waiting for it: well inside the timeout, no rank left behind. So does
 * a rank killed outright (SIGKILL, as by the out-of-memory killer).
 */
class CrashTest {
    private static final long TIMEOUT_SECONDS = 120;
    /** Whole job, start-up included: generous, as start-up depends on the machine's load. */
    private static final double LIMIT_SECONDS = 60;
    private static final double AFTER_THROW_LIMIT_SECONDS = 10;

    @ParameterizedTest(name = "{1} with {0} ranks")
    @CsvSource({"3, collective", "2, recv", "2, run", "2, killed", "3, killed"})
    void oneRankThrowsTheJobEnds(int ranks, String mode, @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path dir) throws Exception {
        MpiLauncher.Result r = MpiLauncher.run(ranks, CrashMain.class.getName(), List.of(dir.toString(), mode), dir,
                TIMEOUT_SECONDS);
        FailedJobs.assertEndedSoonAfterTheFailure(r, dir.resolve("throwing-at-millis"), System.currentTimeMillis(),
                AFTER_THROW_LIMIT_SECONDS);
        assertTrue(r.seconds() < LIMIT_SECONDS, () -> "the job took " + r.seconds() + " s:\n" + r.describe());
        int failing = ranks - 1;
        if (mode.equals("killed")) {
            // Nothing of the killed rank's own is left to print: mpirun names it and the signal.
            assertTrue(r.output().matches("(?s).*process rank " + failing + " .*exited on signal 9.*"),
                    () -> "the job's output does not name the killed rank:\n" + r.describe());
            assertOthersWereWaitingAndDidNotFinish(dir, ranks);
            return;
        }
        assertTrue(r.output().contains(CrashMain.MESSAGE + " on rank " + failing + " (" + mode + ")"),
                () -> "the failing rank's message is missing:\n" + r.describe());
        assertTrue(r.output().contains("rank " + failing + " failed"),
                () -> "the failure does not name the rank:\n" + r.describe());
        assertOthersWereWaitingAndDidNotFinish(dir, ranks);
    }

    /**
     * Bad input that {@code Agreement} finds on every rank ends the job normally: every rank
     * reports the message and exits with its own code, MPI finalized, no abort.
     */
    @ParameterizedTest(name = "agreed with {0} ranks")
    @CsvSource({"2", "3"})
    void inputEveryRankRefusesEndsTheJobWithoutAnAbort(int ranks, @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path dir)
            throws Exception {
        MpiLauncher.Result r = MpiLauncher.run(ranks, CrashMain.class.getName(), List.of(dir.toString(), "agreed"), dir,
                TIMEOUT_SECONDS);
        assertFalse(r.timedOut(), r::describe);
        assertEquals(2, r.exitCode(), r::describe);
        for (int rank = 0; rank < ranks; rank++) {
            Path report = dir.resolve("rank-" + rank + ".reported");
            assertTrue(Files.exists(report), "rank " + rank + " did not report the bad input:\n" + r.describe());
            assertTrue(Files.readString(report).contains("every rank must have the same rank parity, but"),
                    () -> "rank's report: " + report);
        }
        assertFalse(r.output().contains("MPI_ABORT") || r.output().contains("ending the job"), r::describe);
    }

    /** Agreement on a communicator of some ranks only is not the whole job's: those ranks end it as a crash does. */
    @ParameterizedTest(name = "agreed in half of {0} ranks")
    @CsvSource({"4"})
    void inputRefusedOnSomeRanksEndsTheJobAsACrash(int ranks, @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path dir)
            throws Exception {
        MpiLauncher.Result r = MpiLauncher.run(ranks, CrashMain.class.getName(), List.of(dir.toString(), "agreed-in-half"),
                dir, TIMEOUT_SECONDS);
        FailedJobs.assertEndedSoonAfterTheFailure(r, dir.resolve("throwing-at-millis"), System.currentTimeMillis(),
                AFTER_THROW_LIMIT_SECONDS);
        assertTrue(r.output().contains("every rank must have the same rank, but"), r::describe);
    }

    private static void assertOthersWereWaitingAndDidNotFinish(Path dir, int ranks) {
        for (int rank = 0; rank < ranks; rank++) {
            assertTrue(Files.exists(dir.resolve("rank-" + rank + ".waiting")),
                    "rank " + rank + " never reached its wait");
            assertFalse(Files.exists(dir.resolve("rank-" + rank + ".finished")),
                    "rank " + rank + " finished although its peer failed");
        }
    }
}
