package io.mn4j.gnn.partition;

import io.mn4j.gnn.io.BufferedFileWriter;
import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.IntBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/** A temporary file of {@code int}s in native byte order, written and read sequentially through a buffer. */
final class IntFile {
    private static final int BUFFER = 1 << 20;

    private IntFile() {
    }

    /** Appends ints to a new file. */
    static final class Writer implements Closeable {
        private final BufferedFileWriter out;

        Writer(Path file) throws IOException {
            out = new BufferedFileWriter(file, BUFFER, ByteOrder.nativeOrder(), StandardOpenOption.CREATE_NEW);
        }

        void write(int v) throws IOException {
            out.room(Integer.BYTES).putInt(v);
        }

        @Override
        public void close() throws IOException {
            out.close();
        }
    }

    /** Reads a file's ints from its start. */
    static final class Reader implements Closeable {
        private final Path file;
        private final FileChannel ch;
        private final ByteBuffer buf = ByteBuffer.allocate(BUFFER).order(ByteOrder.nativeOrder());
        private IntBuffer ints = IntBuffer.allocate(0);

        Reader(Path file) throws IOException {
            this.file = file;
            ch = FileChannel.open(file, StandardOpenOption.READ);
            buf.limit(0); // nothing read yet
        }

        /** Reads the next {@code count} ints into {@code into[0..count)}. */
        void read(int[] into, int count) throws IOException {
            int got = 0;
            while (got < count) {
                if (!ints.hasRemaining()) refill();
                int n = Math.min(count - got, ints.remaining());
                ints.get(into, got, n);
                got += n;
            }
        }

        private void refill() throws IOException {
            buf.position(ints.position() * Integer.BYTES);
            buf.compact();
            if (ch.read(buf) < 0 && buf.position() < Integer.BYTES) throw new IOException(file + ": ends early");
            buf.flip();
            ints = buf.asIntBuffer();
        }

        @Override
        public void close() throws IOException {
            ch.close();
        }
    }
}
