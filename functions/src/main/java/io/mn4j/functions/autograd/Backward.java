package io.mn4j.functions.autograd;

import java.util.List;
import org.bytedeco.pytorch.Tensor;

/**
 * The backward pass of a {@link CustomFunction}: gradients of its outputs in, gradients of its
 * inputs out. Runs inside LibTorch's backward pass (grad mode off), on the thread that called
 * {@code backward()}.
 */
@FunctionalInterface
public interface Backward {
    /**
     * @param gradOutputs one entry per output of the function, in order; {@code null} where the
     *     output received no gradient in this backward pass (it was unused, or is not
     *     differentiable): treat it as zeros
     * @return one entry per input of the function, in order; {@code null} means "no gradient"
     *     (zeros). Entries for inputs that do not require grad are ignored. A non-null gradient
     *     must have the input's shape.
     */
    List<Tensor> apply(List<Tensor> gradOutputs) throws Exception;

    /**
     * Called once when the function's backward can no longer run (what it needs was released:
     * after its last backward pass, or with its graph), on the thread that released it; by
     * default nothing.
     */
    default void released() {
    }
}
