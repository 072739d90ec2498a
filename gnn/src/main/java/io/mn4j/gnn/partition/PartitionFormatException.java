package io.mn4j.gnn.partition;

import java.io.IOException;

/**
 * A partition directory that cannot be used: missing or unreadable files, a format version this
 * build does not read, a number of parts that does not match the job, truncated arrays, or arrays
 * whose shape or content disagrees with {@code metadata.json}. The message names the file and
 * what was wrong.
 */
public class PartitionFormatException extends IOException {
    private static final long serialVersionUID = 1L;

    public PartitionFormatException(String message) {
        super(message);
    }

    public PartitionFormatException(String message, Throwable cause) {
        super(message, cause);
    }
}
