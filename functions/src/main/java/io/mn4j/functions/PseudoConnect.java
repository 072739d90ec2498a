package io.mn4j.functions;

import static io.mn4j.functions.ArgumentChecks.describe;
import static io.mn4j.functions.ArgumentChecks.requireTensor;
import static io.mn4j.functions.ArgumentChecks.requireTensors;

import io.mn4j.functions.autograd.Backward;
import io.mn4j.functions.autograd.CustomFunction;
import io.mn4j.functions.autograd.CustomFunction.Schedule;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.bytedeco.pytorch.Tensor;

/**
 * pseudoConnect (ChainerMN's {@code pseudo_connect.py}): values whose backward also runs a
 * delegate's graph; the contract is on {@link Functions}. It communicates nothing, so it needs no
 * communicator and its backward may run again through a retained graph.
 */
final class PseudoConnect {
    private PseudoConnect() {
    }

    static Tensor pseudoConnect(Tensor delegate, Tensor actual) {
        requireTensor("pseudoConnect", actual);
        return pseudoConnect(delegate, Collections.singletonList(actual)).get(0);
    }

    static List<Tensor> pseudoConnect(Tensor delegate, List<Tensor> actuals) {
        if (actuals == null) {
            throw new IllegalArgumentException("pseudoConnect: the list of actual values is null");
        }
        requireTensors("pseudoConnect", actuals);
        if (delegate == null) {
            return new ArrayList<>(actuals);
        }
        if (actuals.stream().noneMatch(Gradients::differentiable)) {
            throw new IllegalArgumentException("pseudoConnect: none of the actual values (" + describe(actuals)
                    + ") is floating point, so none can carry the delegate's backward");
        }
        DelegateGradient d = DelegateGradient.of(delegate);
        int n = actuals.size();
        List<Tensor> inputs = new ArrayList<>(n + 1);
        inputs.add(delegate);
        inputs.addAll(actuals);
        Backward backward = grads -> {
            List<Tensor> out = new ArrayList<>(n + 1);
            out.add(d.gradients().get(0));
            out.addAll(grads);
            return out;
        };
        return CustomFunction.apply("pseudoConnect", inputs, actuals, backward, Schedule.NATURAL, null).outputs();
    }
}
