package io.mn4j.gnn.io;

import java.io.IOException;

/** A {@code .npy} stream that is not a valid array of a supported kind; the message names the source and the problem. */
public class NpyFormatException extends IOException {
    private static final long serialVersionUID = 1L;

    public NpyFormatException(String message) {
        super(message);
    }
}
