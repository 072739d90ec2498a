package io.mn4j.communicator;

import mpi.MPI;
import mpi.MPIException;

/**
 * A tensor's dtype and shape folded into the tag of its one message, where they fit: a receiver
 * that probes the message learns the byte count from MPI and the rest from the tag, so the
 * tensor travels as its own bytes, with no header message in front and no second message to
 * wait for. The shapes that fit are those of up to three dimensions, the trailing ones small,
 * with at least one element when there are two or three (the leading dimension is the element
 * count divided by the trailing ones). Other tensors are sent as a header message tagged
 * {@link #HEADER}, then their payload tagged {@link #PAYLOAD}.
 *
 * <p>The tag's top four bits are the dtype's code (1 to 9, so never {@link #HEADER} or
 * {@link #PAYLOAD}), the next two the number of dimensions, and the rest the trailing
 * dimensions: one for two dimensions, two of half the bits each for three.
 */
final class ShapeTag {
    /** The tag of a header message: the tensor's shape was not in a tag. */
    static final int HEADER = 0;
    /** The tag of the payload that follows a {@link #HEADER} message. */
    static final int PAYLOAD = 1;

    private final int dimBits;

    /** Tags of {@code tagBits} bits, of which MPI must accept every value. */
    ShapeTag(int tagBits) {
        this.dimBits = tagBits - 6;
    }

    /**
     * How many low bits of a tag are usable: MPI guarantees an upper bound of at least 32767.
     * (The bound is an attribute of MPI_COMM_WORLD only; it holds for every communicator.)
     */
    static int usableBits() throws MPIException {
        long upperBound = tagUpperBound();
        return Math.min(30, 63 - Long.numberOfLeadingZeros(upperBound + 1));
    }

    /** MPI_TAG_UB: the largest tag this MPI accepts. */
    static int tagUpperBound() throws MPIException {
        return (Integer) MPI.COMM_WORLD.getAttr(MPI.TAG_UB);
    }

    /** The tag that carries this dtype and shape, or {@link #HEADER} if they do not fit. */
    int of(TensorHeader h) {
        long[] shape = h.shape;
        long trailing;
        switch (shape.length) {
            case 0, 1 -> trailing = 0;
            case 2 -> {
                if (h.numel == 0 || shape[1] >= 1L << dimBits) {
                    return HEADER;
                }
                trailing = shape[1];
            }
            case 3 -> {
                int half = dimBits / 2;
                if (h.numel == 0 || shape[1] >= 1L << half || shape[2] >= 1L << half) {
                    return HEADER;
                }
                trailing = shape[1] << half | shape[2];
            }
            default -> {
                return HEADER;
            }
        }
        return h.type.code << (dimBits + 2) | shape.length << dimBits | (int) trailing;
    }

    /**
     * The dtype and shape of a message of {@code bytes} bytes with a tag from {@link #of}, received
     * by operation {@code op} from rank {@code src} (named in the exception if it is none).
     */
    TensorHeader read(int tag, long bytes, String op, int src) {
        int code = tag >>> (dimBits + 2);
        int ndim = (tag >>> dimBits) & 3;
        long trailing = tag & ((1L << dimBits) - 1);
        WireType type = WireType.findCode(code);
        long numel = type == null ? -1 : bytes / type.elementSize;
        long[] shape = switch (ndim) {
            case 0 -> new long[0];
            case 1 -> new long[] {numel};
            case 2 -> new long[] {trailing == 0 ? -1 : numel / trailing, trailing};
            default -> {
                int half = dimBits / 2;
                long d1 = trailing >>> half;
                long d2 = trailing & ((1L << half) - 1);
                yield new long[] {d1 * d2 == 0 ? -1 : numel / (d1 * d2), d1, d2};
            }
        };
        TensorHeader h = type == null || shape.length > 0 && shape[0] < 0 ? null : new TensorHeader(type, shape);
        if (h == null || h.nbytes != bytes) {
            throw new CommunicationException(op + " from rank " + src + ": received a message that is not an mn4j tensor "
                    + "(tag " + tag + ", " + bytes + " bytes): mismatched calls of collectives?");
        }
        return h;
    }
}
