package io.mn4j.communicator;

import io.mn4j.tensor.Tensors;
import java.nio.LongBuffer;
import java.util.Arrays;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * Shape and dtype of a tensor as they travel in front of its data: a fixed block of
 * {@link #LONGS} longs, so that a receiver can post one receive without knowing the size.
 */
final class TensorHeader {
    static final int MAX_DIMS = 12;
    static final int LONGS = 4 + MAX_DIMS;
    static final int BYTES = LONGS * Long.BYTES;
    private static final long MAGIC = 0x6d6e346a00000000L; // "mn4j"
    /**
     * Slot 3 of a header row: {@link #INVALID} for a rank with invalid input; for a tensor, the
     * sender's chunk size where a payload follows the header ({@link #write(LongBuffer, int, long)}),
     * else 0.
     */
    private static final long INVALID = -1;

    final WireType type;
    final long[] shape;
    final long numel;
    final long nbytes;

    TensorHeader(WireType type, long[] shape) {
        this.type = type;
        this.shape = shape;
        long n = 1;
        for (long d : shape) {
            n *= d;
        }
        this.numel = n;
        this.nbytes = n * type.elementSize;
    }

    static TensorHeader of(Tensor t) {
        if (!isDense(t)) {
            // Sparse and MKL-DNN tensors have no one block of memory to send.
            throw new CommunicationException("only dense (strided) tensors can be communicated; got a "
                    + t.layout() + " tensor (call to_dense() first)");
        }
        long[] shape = Tensors.shape(t);
        if (shape.length > MAX_DIMS) {
            throw new CommunicationException("tensors of more than " + MAX_DIMS
                    + " dimensions cannot be communicated; got " + shape.length + " dimensions");
        }
        return new TensorHeader(WireType.of(t.scalar_type()), shape);
    }

    void write(LongBuffer out, int at) {
        write(out, at, 0);
    }

    /**
     * Writes the header of a payload that follows in chunks of {@code chunkBytes}: the receiver
     * splits its receive as the sender split the message ({@link #chunkBytes}).
     */
    void write(LongBuffer out, int at, long chunkBytes) {
        out.put(at, MAGIC | type.code);
        out.put(at + 1, shape.length);
        out.put(at + 2, nbytes);
        out.put(at + 3, chunkBytes);
        for (int i = 0; i < MAX_DIMS; i++) {
            out.put(at + 4 + i, i < shape.length ? shape[i] : 0);
        }
    }

    /**
     * Writes, instead of a header, the mark of a rank whose own input was invalid, so that the
     * peers fail with it rather than wait for a tensor; {@code code} says what was wrong
     * ({@link Outgoing#describe}).
     */
    static void writeInvalid(LongBuffer out, int at, long code) {
        out.put(at, 0);
        out.put(at + 2, code);
        out.put(at + 3, INVALID);
    }

    static boolean isInvalid(LongBuffer in, int at) {
        return in.get(at + 3) == INVALID;
    }

    /** The code written by {@link #writeInvalid}. */
    static long invalidCode(LongBuffer in, int at) {
        return in.get(at + 2);
    }

    /**
     * The chunk size the sender of a header split its payload by ({@link #write(LongBuffer, int,
     * long)}); throws if the header names none.
     */
    static long chunkBytes(LongBuffer in, int at, String context) {
        long chunk = in.get(at + 3);
        if (chunk <= 0 || chunk > Communicator.DEFAULT_CHUNK_BYTES) {
            throw new CommunicationException(context + ": corrupt header with a chunk size of " + chunk + " bytes");
        }
        return chunk;
    }

    static TensorHeader read(LongBuffer in, int at, String context) {
        long magic = in.get(at);
        if ((magic & 0xffffffff00000000L) != MAGIC) {
            throw new CommunicationException(context + ": received a message that is not an mn4j "
                    + "tensor header (mismatched send/recv pairing or tags?)");
        }
        WireType type = WireType.ofCode(magic & 0xffffffffL);
        long ndim = in.get(at + 1);
        if (ndim < 0 || ndim > MAX_DIMS) {
            throw new CommunicationException(context + ": corrupt header with " + ndim + " dimensions");
        }
        long[] shape = new long[(int) ndim];
        for (int i = 0; i < ndim; i++) {
            shape[i] = in.get(at + 4 + i);
        }
        return new TensorHeader(type, shape);
    }

    Tensor allocate() {
        return ReceiveBuffers.empty(type, shape, nbytes);
    }

    boolean matches(Tensor t) {
        return type.scalarType.value == t.scalar_type().value && Tensors.hasShape(t, shape);
    }

    /**
     * A hash of dtype and shape, for a cheap agreement check across ranks (together with
     * {@link #nbytes}, which must agree exactly). Each step mixes all bits, so shapes that differ
     * collide only by chance (about 2^-63), not by arithmetic as a plain polynomial would.
     */
    long fingerprint() {
        long h = mix(type.code + 0x9E3779B97F4A7C15L * (shape.length + 1));
        for (long d : shape) {
            h = mix(h ^ mix(d));
        }
        return h & Long.MAX_VALUE;
    }

    /** The finalizer of SplitMix64: every input bit affects every output bit. */
    private static long mix(long z) {
        z += 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    @Override
    public String toString() {
        return type.label + Arrays.toString(shape);
    }

    /** Whether {@code t} is strided, with one block of memory (not sparse or MKL-DNN). */
    static boolean isDense(Tensor t) {
        return t.layout().value == torch.Layout.Strided.value; // JavaCPP enums compare by value
    }

    /** Dtype and shape for messages, also of a tensor that cannot be communicated. */
    static String describe(Tensor t) {
        try {
            return of(t).toString();
        } catch (CommunicationException notSendable) {
            return (isDense(t) ? "" : t.layout() + " ") + t.scalar_type() + Arrays.toString(Tensors.shape(t));
        }
    }
}
