package io.mn4j.communicator;

/**
 * A communication call was used wrongly (rank out of range, shape or dtype mismatch, wrong list
 * length, ...) or failed in MPI. The message names the operation, the ranks and the shapes involved.
 */
public class CommunicationException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public CommunicationException(String message) {
        super(message);
    }

    public CommunicationException(String message, Throwable cause) {
        super(message, cause);
    }
}
