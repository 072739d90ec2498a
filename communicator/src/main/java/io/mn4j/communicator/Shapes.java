package io.mn4j.communicator;

import org.bytedeco.pytorch.Tensor;

/**
 * Shapes of tensors read without native allocations. {@code Tensor.sizes().vec()} makes two
 * native objects per call, and while JavaCPP's {@code maxPhysicalBytes} limit is on it reads
 * {@code /proc/self/statm} for each one (about a microsecond apiece); {@code dim()} and
 * {@code size(i)} return plain longs. This matters on paths that run once per message.
 */
public final class Shapes {
    private Shapes() {
    }

    /** The sizes of {@code t}, one per dimension (empty for a 0-d tensor). */
    public static long[] of(Tensor t) {
        int ndim = (int) t.dim();
        long[] shape = new long[ndim];
        for (int i = 0; i < ndim; i++) {
            shape[i] = t.size(i);
        }
        return shape;
    }

    /** True if {@code t} has exactly the sizes {@code shape}. */
    public static boolean matches(Tensor t, long[] shape) {
        if (t.dim() != shape.length) {
            return false;
        }
        for (int i = 0; i < shape.length; i++) {
            if (t.size(i) != shape[i]) {
                return false;
            }
        }
        return true;
    }
}
