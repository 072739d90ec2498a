package io.mn4j.functions;

import io.mn4j.communicator.CommunicationException;
import io.mn4j.tensor.Tensors;
import java.util.Arrays;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/** How gradients travel between ranks: which tensors carry one, and the zero-gradient marker. */
final class Gradients {
    private Gradients() {
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
        if (!Tensors.hasShape(g, expectedShape)) {
            throw new CommunicationException(context + ": received a gradient of shape "
                    + Tensors.shapeString(g) + " for a tensor of shape " + Arrays.toString(expectedShape));
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
}
