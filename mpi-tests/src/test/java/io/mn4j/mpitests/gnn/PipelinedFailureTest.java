package io.mn4j.mpitests.gnn;

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
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A rank that fails in PIPELINED training ({@link PipelinedFailureMain}, 3 ranks) ends the job on
 * every rank, non-zero, with its message, within seconds: closing its shard manager on the way
 * out (try-with-resources) must not leave it waiting on partners that wait for it.
 */
class PipelinedFailureTest {
    private static final int RANKS = 3;
    private static final long TIMEOUT_SECONDS = 120;
    private static final double AFTER_THROW_LIMIT_SECONDS = 10;

    @ParameterizedTest(name = "the last rank throws: {0}")
    @ValueSource(strings = {"first-epoch", "forward", "backward"})
    void aRankFailingInPipelinedTrainingEndsTheJob(String where, @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path dir)
            throws Exception {
        MpiLauncher.Result r = MpiLauncher.run(RANKS, PipelinedFailureMain.class.getName(), List.of(dir.toString(), where),
                dir, TIMEOUT_SECONDS);
        FailedJobs.assertEndedSoonAfterTheFailure(r, dir.resolve("throwing-at-millis"), System.currentTimeMillis(),
                AFTER_THROW_LIMIT_SECONDS);
        int failing = RANKS - 1;
        assertTrue(r.output().contains(PipelinedFailureMain.MESSAGE + " on rank " + failing + " (" + where + ")"),
                () -> "the failing rank's message is missing:\n" + r.describe());
        assertTrue(r.output().contains("rank " + failing + " failed"), () -> "the failure does not name the rank:\n" + r.describe());
        for (int rank = 0; rank < RANKS; rank++) {
            assertFalse(Files.exists(dir.resolve("rank-" + rank + ".finished")), "rank " + rank + " finished its training:\n"
                    + r.describe());
        }
    }
}
