package io.mn4j.gnn.util;

/**
 * A failure every rank of a job knows about (see {@link Agreement#agree}): all ranks throw it at
 * the same point, so a program can report it and end normally, with a non-zero exit code, instead
 * of aborting the job from the first rank that failed.
 */
public final class JobInputException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** @param message this rank's error, or why this rank stops although it did not fail itself */
    public JobInputException(String message, Throwable cause) {
        super(message, cause);
    }
}
