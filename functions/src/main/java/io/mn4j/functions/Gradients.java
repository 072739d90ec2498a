package io.mn4j.functions;

import io.mn4j.communicator.CommunicationException;
import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.bytedeco.pytorch.Tensor;
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
        return Tensors.empty(dtype, 0);
    }

    /** What goes over the wire for gradient {@code g}: {@code g}, or the marker when it is null. */
    static Tensor gradientOrMarker(Tensor g, torch.ScalarType dtype) {
        return g != null ? g : zeroGradientMarker(dtype);
    }

    /** {@link #gradientOrMarker} of every gradient, {@code dtypes[j]} the dtype of the j-th. */
    static List<Tensor> gradientsOrMarkers(List<Tensor> grads, torch.ScalarType[] dtypes) {
        List<Tensor> out = new ArrayList<>(grads.size());
        for (int j = 0; j < grads.size(); j++) {
            out.add(gradientOrMarker(grads.get(j), dtypes[j]));
        }
        return out;
    }

    /**
     * A received gradient, or null when the peer sent the zero-gradient marker; for a tensor
     * without elements, a gradient without elements of its shape (as PyTorch gives), never null.
     */
    static Tensor receivedGradient(Tensor g, long[] expectedShape, String context) {
        if (g.numel() == 0) {
            return Arrays.stream(expectedShape).anyMatch(d -> d == 0) ? g.view(expectedShape) : null;
        }
        if (!Tensors.hasShape(g, expectedShape)) {
            throw new CommunicationException(context + ": received a gradient of shape "
                    + Tensors.shapeString(g) + " for a tensor of shape " + Arrays.toString(expectedShape));
        }
        return g;
    }

    /** Sum of received gradients (in place into the first, which is ours), skipping zero markers. */
    static Tensor sumReceived(List<Tensor> parts, long[] shape, String context) {
        Tensor acc = null;
        for (int r = 0; r < parts.size(); r++) {
            Tensor g = receivedGradient(parts.get(r), shape, context + " from rank " + r);
            if (g != null) {
                acc = acc == null ? g : acc.add_(g);
            }
        }
        return acc;
    }
}
