package io.mn4j.iterators;

/**
 * A data set could not be read or used: a missing or malformed file, a batch that does not fit,
 * ranks that disagree on a data set. The message says which file, rank or size is at fault.
 */
public class DatasetException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public DatasetException(String message) {
        super(message);
    }

    public DatasetException(String message, Throwable cause) {
        super(message, cause);
    }
}
