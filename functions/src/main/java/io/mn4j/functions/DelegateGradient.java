package io.mn4j.functions;

import io.mn4j.tensor.Tensors;
import java.util.Collections;
import java.util.List;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * The gradient a delegate input gets: zero, built from its shape and dtype. Never the delegate
 * itself: a backward is held until its graph dies, and holding the graph would keep it alive forever.
 */
record DelegateGradient(boolean present, long[] shape, torch.ScalarType dtype) {
    static DelegateGradient of(Tensor delegateOrNull) {
        return delegateOrNull == null ? new DelegateGradient(false, null, null)
                : new DelegateGradient(true, Tensors.shape(delegateOrNull), delegateOrNull.scalar_type());
    }

    /** The delegate's entry in a list of input gradients: one, or none without a delegate. */
    List<Tensor> gradients() {
        return present ? Collections.singletonList(zeroIfTiny()) : List.of();
    }

    /** Zero, allocated only when the delegate is tiny (a 0-dim delegate, as usual), else none. */
    private Tensor zeroIfTiny() {
        long n = 1;
        for (long s : shape) {
            n *= s;
        }
        return n <= 1 ? Tensors.zeros(dtype, shape) : null;
    }
}
