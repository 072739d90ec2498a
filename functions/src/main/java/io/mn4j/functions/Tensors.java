package io.mn4j.functions;

import io.mn4j.communicator.Shapes;
import java.util.Arrays;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/** Small tensor helpers of the functions. */
final class Tensors {
    private Tensors() {
    }

    /** A new int64 vector holding {@code values}. */
    static Tensor longs(long... values) {
        Tensor t = torch.empty(new long[] {values.length}, new TensorOptions(torch.ScalarType.Long), null);
        if (values.length > 0) {
            new LongPointer(t.data_ptr()).capacity(values.length).put(values);
        }
        return t;
    }

    /** The values of an int64 tensor. */
    static long[] toLongs(Tensor t) {
        Tensor c = t.to(torch.ScalarType.Long).contiguous();
        long n = c.numel();
        long[] out = new long[(int) n];
        if (n > 0) {
            new LongPointer(c.data_ptr()).capacity(n).get(out);
        }
        return out;
    }

    /** Floating point or complex: the dtypes that carry gradients. */
    static boolean differentiable(Tensor t) {
        return t != null && t.defined() && (t.is_floating_point() || t.is_complex());
    }

    /** The message that stands for "zero gradient": an empty tensor, whatever the shape. */
    static Tensor zeroGradientMarker(torch.ScalarType dtype) {
        return torch.empty(new long[] {0}, new TensorOptions(dtype), null);
    }

    /** What goes over the wire for gradient {@code g}: {@code g}, or the marker when it is null. */
    static Tensor gradientOrMarker(Tensor g, torch.ScalarType dtype) {
        return g != null ? g : zeroGradientMarker(dtype);
    }

    /** A received gradient, or null when the peer sent the zero-gradient marker. */
    static Tensor receivedGradient(Tensor g, long[] expectedShape, String context) {
        if (g.numel() == 0) {
            return null;
        }
        if (!Shapes.matches(g, expectedShape)) {
            throw new io.mn4j.communicator.CommunicationException(context + ": received a gradient of shape "
                    + Arrays.toString(Shapes.of(g)) + " for a tensor of shape " + Arrays.toString(expectedShape));
        }
        return g;
    }

    /** The gradient a delegate gets: zero (allocated only when it is tiny), else none. */
    static Tensor delegateGradient(long[] shape, torch.ScalarType dtype) {
        long n = 1;
        for (long s : shape) {
            n *= s;
        }
        return n <= 1 ? torch.zeros(shape, new TensorOptions(dtype)) : null;
    }

    static String shape(Tensor t) {
        return t == null ? "null" : t.scalar_type() + Arrays.toString(Shapes.of(t));
    }
}
