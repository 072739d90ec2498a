package io.mn4j.functions;

import io.mn4j.communicator.Communicator;
import io.mn4j.functions.autograd.Backward;
import io.mn4j.functions.autograd.CustomFunction;
import io.mn4j.functions.autograd.CustomFunction.Result;
import io.mn4j.functions.autograd.CustomFunction.Schedule;
import java.util.Collections;
import java.util.List;
import org.bytedeco.pytorch.GradMode;
import org.bytedeco.pytorch.Tensor;

/**
 * {@link CustomFunction#apply} for the functions that communicate: their backward refuses
 * {@code create_graph} before communicating, since gradients received from other ranks carry no
 * history and the cross-rank terms of a double backward would be lost silently.
 */
final class CommunicatingFunction {
    /**
     * Why a point-to-point backward runs once per forward (the peer sends or awaits exactly one
     * gradient): the end of the message a second backward pass throws.
     */
    private static final String ONCE = "a gradient travels back once per forward; run the forward again"
            + " (retain_graph does not send or receive gradients again)";

    private CommunicatingFunction() {
    }

    /** A collective: its backward may run again through a retained graph, as every rank takes part alike. */
    static Result connectCollective(String name, List<Tensor> inputs, List<Tensor> outputs, Backward backward,
            Schedule schedule, Communicator comm) {
        return connect(name, inputs, outputs, backward, schedule, comm, false);
    }

    /** send, recv, sendAll and recvAll: a second backward pass throws before communicating. */
    static Result connectPointToPoint(String name, List<Tensor> inputs, List<Tensor> outputs, Backward backward,
            Schedule schedule, Communicator comm) {
        return connect(name, inputs, outputs, backward, schedule, comm, true);
    }

    /** The inputs of a function that takes an optional delegate. */
    static List<Tensor> inputsOf(Tensor delegateOrNull) {
        return delegateOrNull == null ? List.of() : Collections.singletonList(delegateOrNull);
    }

    private static Result connect(String name, List<Tensor> inputs, List<Tensor> outputs, Backward backward,
            Schedule schedule, Communicator comm, boolean oncePerForward) {
        Backward firstOrderOnly = new Backward() {
            @Override
            public List<Tensor> apply(List<Tensor> grads) throws Exception {
                // Grad mode is on inside the backward pass only under create_graph.
                if (GradMode.is_enabled()) {
                    throw new UnsupportedOperationException(name + ": backward with create_graph=true (double"
                            + " backward) is not supported through communication: gradients received from other"
                            + " ranks carry no history, so the cross-rank terms would be lost. Call backward()"
                            + " without create_graph on every rank (this rank sent and received nothing here)");
                }
                return backward.apply(grads);
            }

            @Override
            public void released() {
                backward.released();
            }
        };
        return CustomFunction.apply(name, inputs, outputs, firstOrderOnly, schedule, comm, oncePerForward ? ONCE : null);
    }
}
