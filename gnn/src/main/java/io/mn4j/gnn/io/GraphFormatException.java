package io.mn4j.gnn.io;

import java.io.IOException;

/**
 * A graph file or folder that cannot be used as it is: a malformed line, a row of the wrong width,
 * a label out of range, a missing or truncated file. The message names the file, and where it
 * helps the line or node, and says what was wrong.
 */
public class GraphFormatException extends IOException {
    private static final long serialVersionUID = 1L;

    public GraphFormatException(String message) {
        super(message);
    }

    public GraphFormatException(String message, Throwable cause) {
        super(message, cause);
    }
}
