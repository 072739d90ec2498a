package io.mn4j.gnn.io;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;

/**
 * A file written front to back through a buffer: callers put values into {@link #room(int)}, which
 * writes the buffer out whenever it is too full for the next value.
 */
public final class BufferedFileWriter implements Closeable {
    private final FileChannel ch;
    private final ByteBuffer buf;

    /**
     * Opens {@code file} for writing (with {@code options}, e.g. {@link StandardOpenOption#CREATE_NEW};
     * none: create or replace).
     */
    public BufferedFileWriter(Path file, int bufferBytes, ByteOrder order, OpenOption... options) throws IOException {
        this.buf = ByteBuffer.allocate(Math.max(16, bufferBytes)).order(order);
        this.ch = options.length > 0 ? FileChannel.open(file, withWrite(options))
                : FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE);
    }

    private static OpenOption[] withWrite(OpenOption[] options) {
        OpenOption[] o = Arrays.copyOf(options, options.length + 1);
        o[options.length] = StandardOpenOption.WRITE;
        return o;
    }

    /** The buffer, with room for at least {@code bytes} more (at most its capacity). */
    public ByteBuffer room(int bytes) throws IOException {
        if (buf.remaining() < bytes) flush();
        return buf;
    }

    /** Writes the buffer out, then {@code bytes} straight to the file. */
    public void write(ByteBuffer bytes) throws IOException {
        flush();
        while (bytes.hasRemaining()) ch.write(bytes);
    }

    private void flush() throws IOException {
        buf.flip();
        while (buf.hasRemaining()) ch.write(buf);
        buf.clear();
    }

    /** Writes what is buffered and closes the file. */
    @Override
    public void close() throws IOException {
        try (FileChannel c = ch) {
            flush();
        }
    }
}
