package io.mn4j.gnn.io;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * Writes one {@code .npy} array whose shape is known in advance, its values appended in C order a
 * few at a time, so that an array larger than memory can be written as it is produced. The file's
 * bytes are those {@link Npy#write} writes for the same array. {@link #close()} checks that exactly
 * the declared number of values was written.
 */
public final class NpyStreamWriter implements Closeable {
    private final Path file;
    private final ScalarType type;
    private final long numel;
    private final BufferedFileWriter out;
    private long written;

    private NpyStreamWriter(Path file, ScalarType type, long[] shape, int bufferBytes) throws IOException {
        this.file = file;
        this.type = type;
        long n = 1;
        for (long d : shape) n = Math.multiplyExact(n, d);
        this.numel = n;
        this.out = new BufferedFileWriter(file, bufferBytes, ByteOrder.LITTLE_ENDIAN);
        try {
            out.write(ByteBuffer.wrap(Npy.header(Npy.descr(type), shape)));
        } catch (IOException | RuntimeException e) {
            out.close();
            throw e;
        }
    }

    /**
     * Creates {@code file} (replacing it) with the header of an array of {@code type} and {@code shape}.
     *
     * @param type float32, float64, int64 or bool
     * @param bufferBytes bytes gathered before each write to the file
     */
    public static NpyStreamWriter open(Path file, ScalarType type, int bufferBytes, long... shape) throws IOException {
        return new NpyStreamWriter(file, type, shape.clone(), bufferBytes);
    }

    /** Appends {@code len} int64 values. */
    public void writeLongs(long[] a, int off, int len) throws IOException {
        expect(ScalarType.Long, len);
        for (int i = off; i < off + len; i++) out.room(Long.BYTES).putLong(a[i]);
    }

    /** Appends one int64 value. */
    public void writeLong(long v) throws IOException {
        expect(ScalarType.Long, 1);
        out.room(Long.BYTES).putLong(v);
    }

    /** Appends {@code len} float32 values. */
    public void writeFloats(float[] a, int off, int len) throws IOException {
        expect(ScalarType.Float, len);
        for (int i = off; i < off + len; i++) out.room(Float.BYTES).putFloat(a[i]);
    }

    /** Appends {@code len} bool values. */
    public void writeBooleans(boolean[] a, int off, int len) throws IOException {
        expect(ScalarType.Bool, len);
        for (int i = off; i < off + len; i++) out.room(1).put((byte) (a[i] ? 1 : 0));
    }

    private void expect(ScalarType t, int len) {
        if (t != type) throw new IllegalArgumentException(file + ": writing " + t + " values into a " + type + " array");
        if (written + len > numel) throw new IllegalStateException(file + ": more than the " + numel + " values declared");
        written += len;
    }

    /** Writes what is buffered and closes the file; fails if fewer values were written than declared. */
    @Override
    public void close() throws IOException {
        out.close();
        if (written != numel) {
            throw new IllegalStateException(file + ": " + written + " of the " + numel + " values declared were written");
        }
    }

    @Override
    public String toString() {
        return "NpyStreamWriter[" + file + ", " + type + ", " + written + "/" + numel + "]";
    }
}
