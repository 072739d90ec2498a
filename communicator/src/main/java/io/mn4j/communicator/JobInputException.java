package io.mn4j.communicator;

/**
 * Input a job cannot use: a file that is missing or malformed, an argument out of range, ranks
 * that disagree on what must be the same. Where {@link Agreement} raises it, every rank throws it
 * at the same point, so a program can report it and end normally, with a non-zero exit code,
 * instead of aborting the job from the first rank that failed.
 */
public class JobInputException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final boolean onEveryRank;

    /** @param message this rank's error, or why this rank stops although it did not fail itself */
    public JobInputException(String message, Throwable cause) {
        this(message, cause, false);
    }

    JobInputException(String message, Throwable cause, boolean onEveryRank) {
        super(message, cause);
        this.onEveryRank = onEveryRank;
    }

    /**
     * Whether every rank of the job throws this at the same point (raised by {@link Agreement}):
     * then {@link Communicator#run} ends the job normally and passes it on, instead of aborting.
     */
    public boolean onEveryRank() {
        return onEveryRank;
    }
}
