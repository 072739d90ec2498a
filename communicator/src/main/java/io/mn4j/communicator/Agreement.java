package io.mn4j.communicator;

import java.io.Serializable;
import java.nio.file.NoSuchFileException;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * Checks that every rank of a job passes or fails together. Input that one rank cannot use (its
 * file is missing, its argument differs) must stop every rank at the same point, with a message
 * that names the rank and what was wrong: a rank that threw alone would leave the others waiting
 * in the next collective. Each method is a collective over the given communicator and throws a
 * {@link JobInputException} on every rank, or on none.
 */
public final class Agreement {
    private Agreement() {
    }

    /**
     * Runs {@code body} on every rank (a rank with nothing to do may return null at once), then
     * agrees across {@code comm} whether it failed anywhere. The body must not communicate: a rank
     * failing inside a collective would leave the others in it.
     *
     * @param what what the body does, for messages ("loading partition 1 of /tmp/parts")
     * @return this rank's result when no rank failed
     * @throws JobInputException on every rank when any rank failed: on a failed rank with its own
     *     message (the cause is its exception), elsewhere naming every failed rank and its message;
     *     a result that is {@link AutoCloseable} is closed first
     */
    public static <T> T agree(Communicator comm, String what, Callable<T> body) {
        T result = null;
        Exception error = null;
        try {
            result = body.call();
        } catch (Exception e) {
            error = e;
        }
        String mine = error == null ? null : what + ": " + describe(error);
        List<String> failures = comm.problemsOnRanks(mine);
        if (failures.isEmpty()) {
            return result;
        }
        if (result instanceof AutoCloseable c) {
            try {
                c.close();
            } catch (Exception ignored) {
                // the failure being reported matters more
            }
        }
        String message = mine != null ? mine
                : "stopping because " + (failures.size() == 1 ? "another rank" : failures.size() + " other ranks") + " failed: "
                        + String.join("; ", failures);
        throw new JobInputException(message, error, spansJob(comm));
    }

    /**
     * Every rank passes its own problem (null if none); if any rank has one, every rank throws
     * "{@code what} failed on N ranks (of M): rank r: problem; ...", with {@code cause} on this
     * rank.
     */
    public static void noProblems(Communicator comm, String what, String problem, Throwable cause) {
        List<String> bad = comm.problemsOnRanks(problem);
        if (!bad.isEmpty()) {
            throw new JobInputException(what + " failed on " + (bad.size() == 1 ? "one rank" : bad.size() + " ranks")
                    + " (of " + comm.size() + "): " + String.join("; ", bad), cause, spansJob(comm));
        }
    }

    /** {@link #noProblems(Communicator, String, String, Throwable)} without a cause. */
    public static void noProblems(Communicator comm, String what, String problem) {
        noProblems(comm, what, problem, null);
    }

    /**
     * Throws on every rank unless every rank passes the same {@code value}: input that each rank
     * reads for itself (its copy of a file, its command line) but that must be one and the same.
     *
     * @param what what the value is, for the message ("partition offsets")
     * @throws JobInputException on every rank: "every rank must have the same {@code what}, but"
     *     which ranks have which value
     */
    public static void requireSame(Communicator comm, String what, Serializable value) {
        String disagreement = comm.disagreement(value);
        if (disagreement != null) {
            throw new JobInputException("every rank must have the same " + what + ", but " + disagreement, null, spansJob(comm));
        }
    }

    /** Whether {@code comm} holds every rank of the job, so that its agreed failure is the whole job's. */
    private static boolean spansJob(Communicator comm) {
        return comm.size() == MpiJob.worldSize();
    }

    private static String describe(Throwable e) {
        String m = e.getMessage();
        String type = e.getClass().getSimpleName();
        return m == null || m.isBlank() ? type : (e instanceof NoSuchFileException ? "no such file " + m : m);
    }
}
