package io.mn4j.mpitests.communicator;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.mpitests.MpiLauncher;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Ctrl-C on mpirun (it forwards SIGTERM to every rank) while the ranks are inside MPI ends the job
 * cleanly: no rank crashes on its way out (before, finalizing MPI at JVM exit under a thread still
 * in MPI crashed every rank with SIGSEGV and a JVM crash report).
 */
class TerminateTest {
    private static final long TIMEOUT_SECONDS = 120;
    private static final double AFTER_SIGNAL_LIMIT_SECONDS = 15;

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3})
    void sigtermWhileInMpiEndsTheJobWithoutACrash(int ranks, @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path dir) throws Exception {
        long[] signalledAt = {0};
        MpiLauncher.Result r = MpiLauncher.run(ranks, TerminateMain.class.getName(), List.of(dir.toString()), dir,
                TIMEOUT_SECONDS, job -> {
                    if (allWaiting(dir, ranks, job)) {
                        sleep(1000); // well inside the loop of allreduces and messages
                        signalledAt[0] = System.nanoTime();
                        job.destroy(); // SIGTERM to mpirun, which forwards it to the ranks
                    }
                });
        long endedAt = System.nanoTime();
        assertFalse(r.timedOut(), () -> "the job hung:\n" + r.describe());
        assertTrue(signalledAt[0] != 0, () -> "the ranks never reached their loop:\n" + r.describe());
        assertNotEquals(0, r.exitCode(), () -> "a terminated job ended with 0:\n" + r.describe());
        double afterSignal = (endedAt - signalledAt[0]) / 1e9;
        assertTrue(afterSignal < AFTER_SIGNAL_LIMIT_SECONDS,
                () -> "the job took " + afterSignal + " s to end after SIGTERM:\n" + r.describe());
        assertFalse(r.output().contains("SIGSEGV"), () -> "a rank crashed:\n" + r.describe());
        assertTrue(r.output().contains("exiting in the middle of the job"),
                () -> "no rank said why it ended:\n" + r.describe());
        try (Stream<Path> files = Files.list(dir)) {
            List<Path> reports = files.filter(f -> f.getFileName().toString().startsWith("hs_err")).toList();
            assertTrue(reports.isEmpty(), () -> "JVM crash reports " + reports + ":\n" + r.describe());
        }
    }

    private static boolean allWaiting(Path dir, int ranks, Process job) {
        long deadline = System.nanoTime() + 90_000_000_000L;
        while (System.nanoTime() < deadline && job.isAlive()) {
            if (IntStream.range(0, ranks).allMatch(rank -> Files.exists(dir.resolve("rank-" + rank + ".waiting")))) {
                return true;
            }
            sleep(100);
        }
        return false;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}
