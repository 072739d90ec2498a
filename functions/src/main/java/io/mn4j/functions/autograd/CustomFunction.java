package io.mn4j.functions.autograd;

import io.mn4j.functions.autograd.BackwardHooks.HubHook;
import io.mn4j.functions.autograd.BackwardHooks.InputGradientHook;
import io.mn4j.functions.autograd.BackwardHooks.OutputGradientHook;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.GradMode;
import org.bytedeco.pytorch.Node;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * A function with a backward pass written in Java, inserted into LibTorch's own autograd graph
 * with O(1) work per tensor (no C++ extension); every differentiable communication of mn4j is
 * built on it. The caller computes the outputs itself (typically over MPI, outside autograd) and
 * hands them to {@link #apply} with the inputs and a {@link Backward}; how the graph is wired and
 * why: {@code functions/README.md}, "How it works".
 *
 * <p>Use {@code Tensor.backward()}: {@code torch.autograd.grad} with explicit inputs skips nodes
 * that do not lead to those inputs, which may skip a communication that a peer waits for.
 * Outputs share memory with the tensors handed in (no copy): do not modify them in place.
 */
public final class CustomFunction {
    /** When the backward of a function should run among the nodes that are ready. */
    public enum Schedule {
        /** LibTorch's order: the most recently created ready node first. */
        NATURAL,
        /** Before every NATURAL node that is ready at the same time (for nonblocking backwards). */
        EAGER
    }

    /**
     * What {@link #apply} returns: the connected outputs and the delegate. The delegate is null
     * when the function has exactly one floating-point output: that output carries the backward.
     */
    public record Result(List<Tensor> outputs, Tensor delegate) {
    }

    /** Sequence numbers of EAGER nodes: above any number LibTorch hands out in practice. */
    private static final long EAGER_BASE = 1L << 62;
    private static final AtomicLong EAGER_COUNTER = new AtomicLong();
    private static final AtomicLong IDS = new AtomicLong();

    /** Pins of live functions: freeing one releases the function's state (and, without anchors, hooks). */
    private static final Pins<FunctionState> PINS = new Pins<>(FunctionState::pinReleased);
    /** Leaves that live as long as the graph of a function with anchors: freeing one drops its hooks. */
    private static final Pins<FunctionState> GRAPHS = new Pins<>(FunctionState::graphGone);

    private CustomFunction() {
    }

    /**
     * Connects {@code outputs} to {@code inputs} with {@code backward} as the backward pass. With
     * {@code retain_graph=true} the backward may run once per backward pass, like any LibTorch
     * node's; once what it needs was released (after a backward pass without
     * {@code retain_graph}), a backward pass that reaches it throws an IllegalStateException.
     *
     * @param name for error messages and logs
     * @param inputs tensors the outputs depend on; entries may be null or not require grad (then
     *     no gradient flows to them)
     * @param outputs tensors computed by the caller, not yet part of any graph; entries may be
     *     null. Floating-point ones come back connected; others come back unchanged
     * @param backward computes input gradients from output gradients
     * @param schedule see {@link Schedule}
     * @param owner any object identifying who created the function (see {@link #ownerOf})
     * @return connected outputs (same order, same data) and the delegate (null if exactly one
     *     output is floating point). With grad mode off, the outputs unchanged and a plain zero
     *     delegate: no graph, no backward
     */
    public static Result apply(String name, List<Tensor> inputs, List<Tensor> outputs, Backward backward,
            Schedule schedule, Object owner) {
        return apply(name, inputs, outputs, backward, schedule, owner, null);
    }

    /**
     * {@link #apply(String, List, List, Backward, Schedule, Object)} for a function whose backward
     * must run at most once per forward (a communication: the peer sends one gradient per forward).
     *
     * @param onlyOnce null if the backward may run again in a later backward pass (with
     *     {@code retain_graph}); otherwise why it must not, for the message of the
     *     {@link IllegalStateException} that a second backward pass reaching the function throws
     *     ({@code "<name>: its backward already ran; <onlyOnce>"}) before calling {@code backward}
     */
    public static Result apply(String name, List<Tensor> inputs, List<Tensor> outputs, Backward backward,
            Schedule schedule, Object owner, String onlyOnce) {
        if (!GradMode.is_enabled()) {
            return new Result(new ArrayList<>(outputs), torch.zeros(new long[0]));
        }
        FunctionState state = new FunctionState(IDS.incrementAndGet(), name, owner, backward, onlyOnce, inputs,
                outputs.size());
        List<Tensor> connected = new ArrayList<>(Collections.nCopies(outputs.size(), (Tensor) null));
        int linked = 0;
        for (Tensor y : outputs) {
            linked += linkable(y) ? 1 : 0;
        }
        // With exactly one linked output, its node knows every output gradient: the backward runs
        // there and the hub needs no node of its own (fewer nodes, fewer calls into Java).
        boolean backwardAtOutput = linked == 1;
        Tensor delegate = null;
        List<Pointer> keep = new ArrayList<>();
        try (PointerScope scope = new PointerScope()) {
            // The pin: an empty index that every anchor saves (released once the last anchor has
            // run, or with the graph), or without anchors a 0-dim leaf the hub depends on.
            Tensor pin = state.anchored ? PINS.index(state) : PINS.leaf(state);
            Tensor anchors = anchorInputs(state, inputs, pin);
            Tensor hub = anchors == null ? pin : withGraphPin(state, anchors);
            if (!backwardAtOutput) {
                hub = runBackwardAtHub(state, hub == pin ? pin.mul(new Scalar(1.0)) : hub, schedule);
                delegate = hub;
                keep.add(hub.retainReference());
            }
            for (int j = 0; j < outputs.size(); j++) {
                Tensor y = outputs.get(j);
                if (!linkable(y)) {
                    connected.set(j, y);
                    continue;
                }
                Tensor out = linkOutput(state, j, y, hub, backwardAtOutput, schedule);
                connected.set(j, out);
                keep.add(out.retainReference());
            }
            state.registerNodes();
        }
        // Hand what we return to the caller's scope, if any, as if it had been created there.
        PointerScope outer = PointerScope.getInnerScope();
        for (Pointer p : keep) {
            if (outer != null) {
                outer.attach(p);
                p.releaseReference();
            }
        }
        return new Result(connected, delegate);
    }

    /**
     * The {@code owner} given to {@link #apply} for the function that produced {@code t} (its
     * delegate or one of its outputs), or null if {@code t} was produced by anything else.
     */
    public static Object ownerOf(Tensor t) {
        if (t == null || !t.defined() || !t.requires_grad()) {
            return null;
        }
        try (PointerScope scope = new PointerScope()) {
            Node n = t.grad_fn();
            if (n == null || n.isNull()) {
                return null;
            }
            FunctionState state = FunctionState.ofNode(n.address());
            return state == null ? null : state.owner;
        }
    }

    /** Functions whose graph is still alive (their Java hooks are held); for tests and leak checks. */
    public static int liveFunctions() {
        return PINS.live();
    }

    private static boolean linkable(Tensor y) {
        return y != null && y.defined() && (y.is_floating_point() || y.is_complex());
    }

    /**
     * Gives every differentiable input an anchor, an index_select of none of its elements that
     * saves the pin, with the hook that injects its gradient; returns the anchors' sum (null if
     * there is none).
     */
    private static Tensor anchorInputs(FunctionState state, List<Tensor> inputs, Tensor pin) {
        Tensor sum = null;
        for (int i = 0; i < state.nIn; i++) {
            if (!state.differentiable[i]) {
                continue;
            }
            Tensor x = inputs.get(i);
            // Through a view for leaves: the view's backward hands AccumulateGrad a tensor
            // nobody else holds, which it keeps as the gradient instead of copying it
            // (InputGradientHook copies gradients that are shared, so that keeping them is safe).
            boolean viaView = x.dim() == 0 || x.is_leaf();
            Tensor anchor = (viaView ? x.unsqueeze(0) : x).index_select(0, pin);
            Node anchorNode = anchor.grad_fn();
            anchorNode.add_post_hook(state.hold(new InputGradientHook(state, i, viaView)));
            Tensor s = anchor.sum();
            sum = sum == null ? s : sum.add(s);
        }
        return sum;
    }

    /**
     * The anchors' sum plus a leaf whose AccumulateGrad node the hub's node keeps alive: the index
     * pin goes as soon as the anchors have run, but the hooks must stay as long as their nodes can
     * be reached (a second backward pass must meet them and throw).
     */
    private static Tensor withGraphPin(FunctionState state, Tensor anchors) {
        Tensor graphPin = GRAPHS.leaf(state);
        return anchors.add(graphPin.scalar_type().value == anchors.scalar_type().value
                ? graphPin : graphPin.to(anchors.scalar_type()));
    }

    /** Makes {@code hub}'s node run the backward once every output's gradient is in; returns the hub. */
    private static Tensor runBackwardAtHub(FunctionState state, Tensor hub, Schedule schedule) {
        Node hubNode = hub.grad_fn();
        hubNode.add_pre_hook(state.hold(new HubHook(state)));
        schedule(hubNode, schedule);
        state.addNode(hubNode.address());
        return hub;
    }

    /**
     * {@code y} with history: the hub added in place into an empty slice of it (LibTorch's
     * CopySlices, no data touched), with the hook that captures its gradient on that node.
     */
    private static Tensor linkOutput(FunctionState state, int j, Tensor y, Tensor hub, boolean backwardAtOutput,
            Schedule schedule) {
        Tensor out = y.variable_data();
        (out.dim() == 0 ? out.unsqueeze(0) : out).narrow(0, 0, 0).add_(hub);
        Node outNode = out.grad_fn();
        outNode.add_pre_hook(state.hold(new OutputGradientHook(state, j, backwardAtOutput)));
        schedule(outNode, schedule);
        state.addNode(outNode.address());
        return out;
    }

    private static void schedule(Node node, Schedule schedule) {
        if (schedule == Schedule.EAGER) {
            node.set_sequence_nr(EAGER_BASE + EAGER_COUNTER.incrementAndGet());
        }
    }
}
