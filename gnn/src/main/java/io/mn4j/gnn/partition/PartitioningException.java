package io.mn4j.gnn.partition;

/** A partitioner could not produce a result (missing or failing external tool, invalid input). */
public class PartitioningException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public PartitioningException(String message) {
        super(message);
    }

    public PartitioningException(String message, Throwable cause) {
        super(message, cause);
    }
}
