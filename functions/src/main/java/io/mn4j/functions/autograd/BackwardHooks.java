package io.mn4j.functions.autograd;

import io.mn4j.tensor.Scopes;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.FunctionPostHook;
import org.bytedeco.pytorch.FunctionPreHook;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;

/**
 * The Java hooks through which LibTorch's backward pass runs a {@link CustomFunction}: one on
 * each output's node, one on the hub's node, one after each input's anchor node.
 */
final class BackwardHooks {
    /**
     * What most hooks return: one undefined tensor. LibTorch copies a hook's result, so one
     * permanent vector serves every call (a new one cost two native objects per hook).
     */
    private static final TensorVector UNDEFINED = Scopes.permanent(new TensorVector(Scopes.permanent(new Tensor())));

    private BackwardHooks() {
    }

    /**
     * On an output's node: keeps the output's gradient for the backward (or, for a function with
     * one output, runs the backward right away), passes nothing on.
     */
    static final class OutputGradientHook extends FunctionPreHook {
        private final FunctionState state;
        private final int index;
        private final boolean runBackward;

        OutputGradientHook(FunctionState state, int index, boolean runBackward) {
            super();
            this.state = state;
            this.index = index;
            this.runBackward = runBackward;
        }

        @Override
        public TensorVector apply(TensorVector grads) {
            ReturnedVector.releaseEarlier();
            try (PointerScope scope = new PointerScope()) {
                // get() is a view into LibTorch's vector, which dies after this call: copy it.
                Tensor g = grads.size() > 0 ? grads.get(0) : null;
                if (g != null && g.defined()) {
                    state.setGradOut(index, new Tensor(g).retainReference());
                }
            }
            if (runBackward) {
                state.runBackward();
            }
            return UNDEFINED;
        }
    }

    /** On the hub's node: runs the Java backward once every output's gradient is in. */
    static final class HubHook extends FunctionPreHook {
        private final FunctionState state;

        HubHook(FunctionState state) {
            super();
            this.state = state;
        }

        @Override
        public TensorVector apply(TensorVector grads) {
            ReturnedVector.releaseEarlier();
            state.runBackward();
            return UNDEFINED;
        }
    }

    /**
     * After an input's anchor node (an empty index_select of the input, which computed nothing
     * from its undefined incoming gradient): replaces its output by the input's gradient.
     */
    static final class InputGradientHook extends FunctionPostHook {
        private final FunctionState state;
        private final int index;
        private final boolean viaView;

        InputGradientHook(FunctionState state, int index, boolean viaView) {
            super();
            this.state = state;
            this.index = index;
            this.viaView = viaView;
        }

        @Override
        public TensorVector apply(TensorVector outputs, TensorVector inputs) {
            ReturnedVector.releaseEarlier();
            Tensor g = state.takeGradIn(index);
            if (g == null) {
                return UNDEFINED;
            }
            TensorVector out;
            try (PointerScope scope = new PointerScope()) {
                // LibTorch's AccumulateGrad keeps a gradient that nothing else holds instead of
                // copying it, and the view below hides our own holders from that check: hand it a
                // copy unless g and its memory are ours alone (not the same tensor given to two
                // inputs, not a view of a live buffer, not a tensor the Backward keeps).
                Tensor mine = exclusive(g) ? g : g.clone();
                out = new TensorVector(viaView ? mine.unsqueeze(0) : mine);
                out.retainReference();
            } finally {
                g.releaseReference();
            }
            // The scope has dropped its hold; ours is released by the next hook on this thread or
            // with the function's state (right after this anchor, if it is the last one to run).
            state.keep(ReturnedVector.handedOver(out));
            return out;
        }

        /** Whether this handle is the only reference to {@code g} and to its memory. */
        private static boolean exclusive(Tensor g) {
            return g.use_count() == 1 && (!g.has_storage() || g.storage().use_count() == 1);
        }
    }
}
