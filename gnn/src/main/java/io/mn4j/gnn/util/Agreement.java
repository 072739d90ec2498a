package io.mn4j.gnn.util;

import io.mn4j.communicator.Communicator;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * Work that may fail on some ranks only (reading this rank's files, say), done so that every rank
 * has the same outcome: each rank runs its part, the ranks exchange their errors, and if any
 * failed every rank throws a {@link JobInputException} at the same point. No rank is left waiting
 * in a collective that a failed rank never reaches.
 */
public final class Agreement {
    private Agreement() {
    }

    /**
     * Runs {@code body} on every rank (a rank with nothing to do may return null at once), then
     * agrees across {@code comm} whether it failed anywhere. Collective. The body must not
     * communicate: a rank failing inside a collective would leave the others in it.
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
        throw new JobInputException(message, error);
    }

    /**
     * Throws on every rank unless every rank passes the same {@code value}: input that each rank
     * reads for itself (its copy of a file, say) but that must be one and the same. Collective.
     *
     * @param what what the value is, for the message ("partition offsets")
     * @throws JobInputException on every rank: "every rank must have the same {@code what}, but"
     *     which ranks have which value
     */
    public static void requireSame(Communicator comm, String what, String value) {
        String disagreement = comm.disagreement(value);
        if (disagreement != null) {
            throw new JobInputException("every rank must have the same " + what + ", but " + disagreement, null);
        }
    }

    private static String describe(Throwable e) {
        String m = e.getMessage();
        String type = e.getClass().getSimpleName();
        return m == null || m.isBlank() ? type : (e instanceof java.nio.file.NoSuchFileException ? "no such file " + m : m);
    }
}
