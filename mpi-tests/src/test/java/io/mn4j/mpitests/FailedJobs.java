package io.mn4j.mpitests;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Checks on a job in which one rank failed on purpose. */
public final class FailedJobs {
    private FailedJobs() {
    }

    /**
     * The job did not hang, exited non-zero, and ended within {@code limitSeconds} of the moment
     * the failing rank wrote (as milliseconds since the epoch) to {@code thrownAt} before it threw:
     * start-up (a JVM with LibTorch per rank) takes seconds and more on a loaded machine, so the
     * bound that matters runs from the failure to the end of the whole job.
     *
     * @param endedAt when the launch returned, in milliseconds since the epoch
     */
    public static void assertEndedSoonAfterTheFailure(MpiLauncher.Result r, Path thrownAt, long endedAt, double limitSeconds)
            throws IOException {
        assertFalse(r.timedOut(), () -> "the job hung:\n" + r.describe());
        assertNotEquals(0, r.exitCode(), () -> "the job ended with 0:\n" + r.describe());
        assertTrue(Files.exists(thrownAt), () -> "the failing rank never got to throw:\n" + r.describe());
        double after = (endedAt - Long.parseLong(Files.readString(thrownAt).trim())) / 1000.0;
        assertTrue(after < limitSeconds, () -> "the job took " + after + " s to end after the failure:\n" + r.describe());
    }
}
