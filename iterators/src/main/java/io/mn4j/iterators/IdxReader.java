package io.mn4j.iterators;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipException;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads IDX files, the format of MNIST and Fashion-MNIST: a 4-byte magic {@code 00 00 TT DD}
 * (element type TT, DD dimensions), DD big-endian int32 dimension sizes, then the elements
 * big-endian in row-major order. Gzipped files (as Debian ships them) are recognised by their
 * content, whatever their name.
 *
 * <p>Element types: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64,
 * read into a tensor of that dtype and of the announced shape.
 */
public final class IdxReader {
    private static final Logger LOG = LoggerFactory.getLogger(IdxReader.class);
    private static final int CHUNK = 1 << 20;

    private IdxReader() {
    }

    /**
     * Reads a whole IDX file (gzipped or not) into a tensor.
     *
     * @throws DatasetException if the file is missing, not IDX, or shorter than its header says
     */
    public static Tensor read(Path file) {
        if (!Files.isRegularFile(file)) {
            throw new DatasetException("IDX file not found: " + file);
        }
        try (InputStream raw = new BufferedInputStream(Files.newInputStream(file), CHUNK)) {
            raw.mark(2);
            int b0 = raw.read();
            int b1 = raw.read();
            raw.reset();
            boolean gzipped = b0 == 0x1f && b1 == 0x8b;
            InputStream in = gzipped ? new BufferedInputStream(new GZIPInputStream(raw, CHUNK), CHUNK) : raw;
            return read(new DataInputStream(in), file + (gzipped ? " (gzipped)" : ""));
        } catch (NoSuchFileException e) {
            throw new DatasetException("IDX file not found: " + file, e);
        } catch (ZipException e) {
            throw new DatasetException("IDX file " + file + " is not a valid gzip stream: " + e.getMessage(), e);
        } catch (IOException e) {
            throw new DatasetException("cannot read IDX file " + file + ": " + e, e);
        }
    }

    private static Tensor read(DataInputStream in, String name) throws IOException {
        byte[] magic = new byte[4];
        int got = in.readNBytes(magic, 0, 4);
        if (got < 4) {
            throw new DatasetException("IDX file " + name + " is truncated: " + got + " bytes, not even a header");
        }
        if (magic[0] != 0 || magic[1] != 0) {
            throw new DatasetException("not an IDX file: " + name + " starts with " + hex(magic)
                    + ", expected 00 00 <type> <dims>");
        }
        torch.ScalarType type;
        int elemSize;
        switch (magic[2] & 0xff) {
            case 0x08 -> { type = torch.ScalarType.Byte; elemSize = 1; }
            case 0x09 -> { type = torch.ScalarType.Char; elemSize = 1; }
            case 0x0B -> { type = torch.ScalarType.Short; elemSize = 2; }
            case 0x0C -> { type = torch.ScalarType.Int; elemSize = 4; }
            case 0x0D -> { type = torch.ScalarType.Float; elemSize = 4; }
            case 0x0E -> { type = torch.ScalarType.Double; elemSize = 8; }
            default -> throw new DatasetException("IDX file " + name + " has unknown element type 0x"
                    + Integer.toHexString(magic[2] & 0xff));
        }
        int dims = magic[3] & 0xff;
        if (dims == 0) {
            throw new DatasetException("IDX file " + name + " declares 0 dimensions");
        }
        long[] shape = new long[dims];
        long count = 1;
        for (int d = 0; d < dims; d++) {
            try {
                shape[d] = Integer.toUnsignedLong(in.readInt());
            } catch (EOFException e) {
                throw new DatasetException("IDX file " + name + " is truncated inside its header (dimension " + d
                        + " of " + dims + ")", e);
            }
            count = Math.multiplyExact(count, shape[d]);
        }
        long nbytes = Math.multiplyExact(count, (long) elemSize);
        Tensor t = torch.empty(shape, new TensorOptions(type), null);
        byte[] chunk = new byte[(int) Math.min(CHUNK, Math.max(nbytes, 1))];
        long done = 0;
        try {
            while (done < nbytes) {
                int want = (int) Math.min(chunk.length, nbytes - done);
                int n = in.readNBytes(chunk, 0, want);
                if (n < want) {
                    throw truncated(name, shape, type, nbytes, done + n, null);
                }
                ByteBuffer dst = new BytePointer(t.data_ptr()).position(done).capacity(done + n).asByteBuffer()
                        .order(ByteOrder.nativeOrder());
                ByteBuffer src = ByteBuffer.wrap(chunk, 0, n).order(ByteOrder.BIG_ENDIAN);
                switch (elemSize) {
                    case 1 -> dst.put(src);
                    case 2 -> dst.asShortBuffer().put(src.asShortBuffer());
                    case 4 -> dst.asIntBuffer().put(src.asIntBuffer());
                    default -> dst.asLongBuffer().put(src.asLongBuffer());
                }
                done += n;
            }
        } catch (EOFException e) {
            // a gzip stream cut short ends in the decompressor, not at a clean end of file
            throw truncated(name, shape, type, nbytes, done, e);
        }
        if (in.read() >= 0) {
            LOG.warn("IDX file {} has data after the {} elements its header announces; ignored", name, count);
        }
        return t;
    }

    private static DatasetException truncated(String name, long[] shape, torch.ScalarType type, long expected,
            long found, Throwable cause) {
        return new DatasetException("IDX file " + name + " is truncated: its header announces " + type
                + Arrays.toString(shape) + " (" + expected + " bytes of data) but only " + found
                + " bytes follow", cause);
    }

    private static String hex(byte[] bytes) {
        StringBuilder sb = new StringBuilder();
        for (byte b : bytes) {
            sb.append(sb.length() == 0 ? "" : " ").append(String.format("%02x", b & 0xff));
        }
        return sb.toString();
    }
}
