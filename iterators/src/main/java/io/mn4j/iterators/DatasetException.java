package io.mn4j.iterators;

import io.mn4j.communicator.JobInputException;

/**
 * A data set could not be read or used: a missing or malformed file, a batch that does not fit.
 * The message says which file, rank or size is at fault. (Ranks that disagree on a data set throw
 * the {@link JobInputException} this extends, on every rank.)
 */
public class DatasetException extends JobInputException {
    private static final long serialVersionUID = 1L;

    public DatasetException(String message) {
        super(message, null);
    }

    public DatasetException(String message, Throwable cause) {
        super(message, cause);
    }
}
