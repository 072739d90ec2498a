package io.mn4j.functions.autograd;

import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.FunctionPostHook;
import org.bytedeco.pytorch.FunctionPreHook;
import org.bytedeco.pytorch.GradMode;
import org.bytedeco.pytorch.Node;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A function with a backward pass written in Java, inserted into LibTorch's own autograd graph
 * (no C++ extension). This is what every differentiable communication of mn4j is built on.
 *
 * <p>The caller computes the outputs itself (typically with MPI, outside autograd) and hands
 * them to {@link #apply} together with the inputs and a {@link Backward}. The returned outputs
 * hold the same data and are connected to the inputs: when LibTorch's backward pass reaches them,
 * the {@code Backward} receives their gradients and the gradients it returns flow on into the
 * inputs' graphs. Every call also returns a <em>delegate</em>: a 0-dim tensor (value 0) that
 * depends on the function, so that a function without outputs (a send) can still be reached by
 * backward (ChainerMN's delegate variable).
 *
 * <h2>How it is wired (and why it costs O(1) per tensor)</h2>
 * <ul>
 *   <li>Every differentiable input {@code x} gets an anchor: an {@code index_select} of no
 *       element of {@code x} (O(1)), whose backward node receives an undefined gradient and so
 *       computes nothing; a Java post-hook on that node replaces its (undefined) result by the
 *       input gradient computed by the {@code Backward}. The anchors, summed, form a 0-dim hub.</li>
 *   <li>The hub is the delegate. Its node's pre-hook runs the {@code Backward} once all output
 *       gradients have arrived (LibTorch runs a node only when every consumer has run) and passes
 *       an undefined gradient on, so that no node between the hub and the anchors computes or
 *       allocates anything. A function with exactly one floating-point output runs its
 *       {@code Backward} in that output's node instead, and has no delegate. Either way the
 *       {@code Backward} runs only if backward reaches an output or the delegate: an output
 *       nothing uses must be tied into a used value to get its (zero) gradient sent.</li>
 *   <li>Every floating-point output {@code y} gets history with an in-place add of the hub into
 *       an empty slice of {@code y} (LibTorch's CopySlices): no data is touched. A pre-hook on that
 *       node captures {@code y}'s gradient and passes an undefined one on.</li>
 *   <li>The pin (see {@link Pins}) is a tensor whose memory has a deleter: the empty index the
 *       anchors save (LibTorch frees it right after the last anchor has run, or with the graph),
 *       or, for a function without differentiable inputs, a 0-dim leaf the hub depends on. When
 *       LibTorch frees it the deleter releases what the function kept for its backward (the
 *       {@code Backward}, gradients not yet handed on).</li>
 *   <li>The Java hook objects live as long as the graph: JavaCPP hook objects are only weakly
 *       referenced from C++, and a hook that the garbage collector took would fail with a bare
 *       NullPointerException if a later backward pass reached its node. A function with anchors
 *       therefore adds a second pin to its hub, a 0-dim leaf (its AccumulateGrad node lives as long
 *       as the hub's node); freeing it drops the hook objects. Without anchors the one pin is
 *       such a leaf already.</li>
 * </ul>
 *
 * <h2>Running the backward again</h2>
 * With {@code retain_graph=true} the backward of a function may run once per backward pass, like
 * any LibTorch node, unless {@link #apply(String, List, List, Backward, Schedule, Object, String)}
 * was given a reason why it must run only once (a communication: the peer sends one gradient per
 * forward); then a second backward pass that reaches the function throws an
 * {@link IllegalStateException} naming the function, before the {@code Backward} is called. Once
 * the function's state was released (a backward pass without {@code retain_graph} has run its
 * anchors), a backward pass that reaches it again throws the same way, for every function.
 *
 * <p>Scheduling: LibTorch's engine runs the ready node with the highest sequence number first
 * (reverse creation order). {@link Schedule#EAGER} moves the output nodes and the hub of a
 * function to the front, so that a backward that never blocks (sending gradients with a
 * nonblocking send) runs as soon as it is ready, before any blocking receive.
 *
 * <p>Limits: use {@code Tensor.backward()}; {@code torch.autograd.grad} with explicit inputs skips
 * nodes that do not lead to those inputs, which may skip a communication that a peer waits for.
 * Outputs share memory with the tensors handed in (no copy): do not modify them in place.
 */
public final class CustomFunction {
    private static final Logger LOG = LoggerFactory.getLogger(CustomFunction.class);

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
    private static final Pins<Context> PINS = new Pins<>(Context::pinReleased);
    /** Leaves that live as long as the graph of a function with anchors: freeing one drops its hooks. */
    private static final Pins<Context> GRAPHS = new Pins<>(Context::graphGone);
    private static final Map<Long, Context> BY_NODE = new ConcurrentHashMap<>();

    /**
     * Vectors returned to LibTorch by input-gradient hooks of a backward pass that keeps its graph
     * ({@code retain_graph}): released by the next hook on the thread (LibTorch copied them by
     * then), or with their function's state, whichever comes first.
     */
    private static final ThreadLocal<List<Returned>> RETURNED = ThreadLocal.withInitial(ArrayList::new);

    /**
     * What most hooks return: one undefined tensor. LibTorch copies a hook's result, so one
     * permanent vector serves every call (a new one cost two native objects per hook).
     */
    private static final TensorVector UNDEFINED = permanent(new TensorVector(permanent(new Tensor())));

    private CustomFunction() {
    }

    /**
     * A native object that lives as long as the JVM: this class may first be used inside a
     * caller's PointerScope, whose close must not free it.
     */
    private static <P extends Pointer> P permanent(P p) {
        p.retainReference();
        return p;
    }

    /**
     * Connects {@code outputs} to {@code inputs} with {@code backward} as the backward pass.
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
     * must run at most once per forward (see "Running the backward again" above).
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
        Context ctx = new Context(IDS.incrementAndGet(), name, owner, backward, onlyOnce, inputs, outputs.size());
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
        boolean anchored = ctx.anchored;
        try (PointerScope scope = new PointerScope()) {
            // The pin: an empty index that every anchor saves (released once the last anchor has
            // run, or with the graph), or without anchors a 0-dim leaf the hub depends on.
            Tensor pin = anchored ? PINS.index(ctx) : PINS.leaf(ctx);
            Tensor hub = null;
            for (int i = 0; i < ctx.nIn; i++) {
                if (!ctx.differentiable[i]) {
                    continue;
                }
                Tensor x = inputs.get(i);
                // Through a view for leaves: the view's backward hands AccumulateGrad a tensor
                // nobody else holds, which it keeps as the gradient instead of copying it
                // (InjectHook copies gradients that are shared, so that keeping them is safe).
                boolean viaView = x.dim() == 0 || x.is_leaf();
                Tensor anchor = (viaView ? x.unsqueeze(0) : x).index_select(0, pin);
                Node anchorNode = anchor.grad_fn();
                anchorNode.add_post_hook(ctx.hold(new InjectHook(ctx, i, viaView)));
                Tensor s = anchor.sum();
                hub = hub == null ? s : hub.add(s);
            }
            if (hub == null) {
                hub = pin;
            } else {
                // The index pin goes as soon as the anchors have run; the hooks must stay as long
                // as their nodes can be reached (a second backward must meet them, see the class
                // comment): a leaf whose AccumulateGrad node the hub's node keeps alive.
                Tensor graphPin = GRAPHS.leaf(ctx);
                hub = hub.add(graphPin.scalar_type().value == hub.scalar_type().value
                        ? graphPin : graphPin.to(hub.scalar_type()));
            }
            if (!backwardAtOutput) {
                if (hub == pin) {
                    hub = pin.mul(new Scalar(1.0));
                }
                Node hubNode = hub.grad_fn();
                hubNode.add_pre_hook(ctx.hold(new HubHook(ctx)));
                if (schedule == Schedule.EAGER) {
                    hubNode.set_sequence_nr(EAGER_BASE + EAGER_COUNTER.incrementAndGet());
                }
                ctx.nodes.add(hubNode.address());
                delegate = hub;
                keep.add(hub.retainReference());
            }
            for (int j = 0; j < outputs.size(); j++) {
                Tensor y = outputs.get(j);
                if (!linkable(y)) {
                    connected.set(j, y);
                    continue;
                }
                Tensor out = y.variable_data();
                (out.dim() == 0 ? out.unsqueeze(0) : out).narrow(0, 0, 0).add_(hub);
                Node outNode = out.grad_fn();
                outNode.add_pre_hook(ctx.hold(new CaptureHook(ctx, j, backwardAtOutput)));
                if (schedule == Schedule.EAGER) {
                    outNode.set_sequence_nr(EAGER_BASE + EAGER_COUNTER.incrementAndGet());
                }
                ctx.nodes.add(outNode.address());
                connected.set(j, out);
                keep.add(out.retainReference());
            }
            for (long address : ctx.nodes) {
                BY_NODE.put(address, ctx);
            }
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
            Context c = BY_NODE.get(n.address());
            return c == null ? null : c.owner;
        }
    }

    /** Functions whose graph is still alive (their Java hooks are held); for tests and leak checks. */
    public static int liveFunctions() {
        return PINS.live();
    }

    /** Whether this handle is the only reference to {@code g} and to its memory. */
    private static boolean exclusive(Tensor g) {
        return g.use_count() == 1 && (!g.has_storage() || g.storage().use_count() == 1);
    }

    private static String deviceOf(Tensor x) {
        try (Device d = x.device()) {
            return d.str().getString();
        }
    }

    private static boolean linkable(Tensor y) {
        return y != null && y.defined() && (y.is_floating_point() || y.is_complex());
    }

    /** Releases the vectors earlier hooks returned: LibTorch has copied them by now. */
    private static void releaseReturned() {
        List<Returned> list = RETURNED.get();
        for (Returned r : list) {
            r.release();
        }
        list.clear();
    }

    /**
     * A vector an input hook returned to LibTorch, released by whichever comes first: the next
     * hook on the thread or the release of the function's state.
     */
    private static final class Returned {
        private TensorVector vector;

        Returned(TensorVector vector) {
            this.vector = vector;
        }

        synchronized void release() {
            if (vector != null) {
                vector.releaseReference();
                vector = null;
            }
        }
    }

    /** The state of one function call, shared by its hooks. */
    private static final class Context {
        final long id;
        final String name;
        final Object owner;
        /** Null once released: it may hold what the caller captured, and the hooks outlive it. */
        Backward backward;
        /** Why the backward must not run twice, or null (see {@link #apply}). */
        final String onlyOnce;
        /** Whether the inputs have anchors (so an index pin; else the pin is the graph's leaf). */
        final boolean anchored;
        final int nIn;
        final int nOut;
        final boolean[] differentiable;
        final long[][] inputShapes;
        final torch.ScalarType[] inputTypes;
        final List<Pointer> hooks = new ArrayList<>();
        final List<Long> nodes = new ArrayList<>();
        final Tensor[] gradOut;
        final Tensor[] gradIn;
        /** Vectors handed to LibTorch by this function's input hooks, not yet released. */
        final List<Returned> returned = new ArrayList<>();
        /** Whether the backward has started (once per backward pass that reaches the function). */
        boolean ran;
        boolean released;

        Context(long id, String name, Object owner, Backward backward, String onlyOnce, List<Tensor> inputs,
                int nOut) {
            this.id = id;
            this.name = name;
            this.owner = owner;
            this.backward = backward;
            this.onlyOnce = onlyOnce;
            this.nIn = inputs.size();
            this.nOut = nOut;
            this.differentiable = new boolean[nIn];
            this.inputShapes = new long[nIn][];
            this.inputTypes = new torch.ScalarType[nIn];
            for (int i = 0; i < nIn; i++) {
                Tensor x = inputs.get(i);
                differentiable[i] = x != null && x.defined() && x.requires_grad();
                if (differentiable[i]) {
                    // The graph is linked through CPU tensors (the pins, and outputs as the
                    // Communicator returns them): LibTorch would refuse a GPU input less clearly.
                    if (!x.is_cpu()) {
                        throw new IllegalArgumentException(name + ": input " + i + " is on " + deviceOf(x)
                                + "; mn4j's differentiable functions take CPU tensors: pass x.cpu() (differentiable)");
                    }
                    inputShapes[i] = Tensors.shape(x);
                    inputTypes[i] = x.scalar_type();
                }
            }
            boolean any = false;
            for (boolean d : differentiable) {
                any |= d;
            }
            this.anchored = any;
            this.gradOut = new Tensor[nOut];
            this.gradIn = new Tensor[nIn];
        }

        <H extends Pointer> H hold(H hook) {
            hooks.add(hook);
            return hook;
        }

        synchronized void setGradOut(int j, Tensor g) {
            if (gradOut[j] != null) {
                gradOut[j].releaseReference();
            }
            // After release nothing would take it: a second backward pass is refused anyway.
            if (released && g != null) {
                g.releaseReference();
                g = null;
            }
            gradOut[j] = g;
        }

        /**
         * The backward to run now, or an exception if it must not run: it ran already and may run
         * only once, or what it needs was released after an earlier backward pass.
         */
        synchronized Backward start() {
            if (released || (ran && onlyOnce != null)) {
                throw new IllegalStateException(name + ": its backward already ran; " + (onlyOnce != null ? onlyOnce
                        : "what it needs was released after that backward pass: pass retain_graph=true to the"
                        + " first backward() to run it again, or run the forward again"));
            }
            ran = true;
            return backward;
        }

        /**
         * Keeps a vector handed to LibTorch until the function's state is released. Once it is,
         * the next hook on the thread releases it: here LibTorch has not taken it yet.
         */
        synchronized void keep(Returned r) {
            if (!released) {
                returned.add(r);
            }
        }

        synchronized List<Tensor> takeGradOut() {
            List<Tensor> out = new ArrayList<>(nOut);
            for (int j = 0; j < nOut; j++) {
                out.add(gradOut[j]);
                gradOut[j] = null;
            }
            return out;
        }

        synchronized void setGradIn(int i, Tensor g) {
            if (gradIn[i] != null) {
                gradIn[i].releaseReference();
            }
            gradIn[i] = g;
        }

        synchronized Tensor takeGradIn(int i) {
            Tensor g = gradIn[i];
            gradIn[i] = null;
            return g;
        }

        /** The pin was freed: the backward cannot run again; without anchors, the graph is gone too. */
        void pinReleased() {
            release();
            if (!anchored) {
                graphGone();
            }
        }

        /** No node of the function can be reached any more: its hooks may go. */
        synchronized void graphGone() {
            release();
            hooks.clear();
        }

        /**
         * Releases what the backward needs (called when the pin is freed: after the last anchor
         * ran, or with the graph), and the vectors the input hooks returned: LibTorch copied each
         * of them when its hook returned, before the anchor that ran it released the pin.
         */
        synchronized void release() {
            if (released) {
                return;
            }
            released = true;
            Backward gone = backward;
            backward = null;
            if (gone != null) {
                gone.released();
            }
            for (long address : nodes) {
                BY_NODE.remove(address, this);
            }
            for (int j = 0; j < nOut; j++) {
                setGradOut(j, null);
            }
            for (int i = 0; i < nIn; i++) {
                setGradIn(i, null);
            }
            for (Returned r : returned) {
                r.release();
            }
            returned.clear();
        }

        @Override
        public String toString() {
            return name + "#" + id;
        }
    }

    /**
     * On an output's node: keeps the output's gradient for the backward (or, for a function with
     * one output, runs the backward right away), passes nothing on.
     */
    private static final class CaptureHook extends FunctionPreHook {
        private final Context ctx;
        private final int index;
        private final boolean runBackward;

        CaptureHook(Context ctx, int index, boolean runBackward) {
            super();
            this.ctx = ctx;
            this.index = index;
            this.runBackward = runBackward;
        }

        @Override
        public TensorVector apply(TensorVector grads) {
            releaseReturned();
            try (PointerScope scope = new PointerScope()) {
                // get() is a view into LibTorch's vector, which dies after this call: copy it.
                Tensor g = grads.size() > 0 ? grads.get(0) : null;
                if (g != null && g.defined()) {
                    ctx.setGradOut(index, new Tensor(g).retainReference());
                }
            }
            if (runBackward) {
                runBackward(ctx);
            }
            return UNDEFINED;
        }
    }

    /** On the hub's node: runs the Java backward once every output's gradient is in. */
    private static final class HubHook extends FunctionPreHook {
        private final Context ctx;

        HubHook(Context ctx) {
            super();
            this.ctx = ctx;
        }

        @Override
        public TensorVector apply(TensorVector grads) {
            releaseReturned();
            runBackward(ctx);
            return UNDEFINED;
        }
    }

    /** Runs the Java backward on the captured output gradients and keeps the input gradients. */
    private static void runBackward(Context ctx) {
        List<Tensor> gradOut = ctx.takeGradOut();
        try (PointerScope scope = new PointerScope()) {
            List<Tensor> gradIn;
            try {
                gradIn = ctx.start().apply(Collections.unmodifiableList(gradOut));
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new RuntimeException(ctx + " backward: " + e.getMessage(), e);
            }
            if (gradIn == null || gradIn.size() != ctx.nIn) {
                throw new IllegalStateException(ctx + " backward returned "
                        + (gradIn == null ? "null" : gradIn.size() + " gradients") + " for "
                        + ctx.nIn + " inputs");
            }
            for (int i = 0; i < ctx.nIn; i++) {
                Tensor g = gradIn.get(i);
                if (!ctx.differentiable[i] || g == null || !g.defined()) {
                    continue;
                }
                if (!Tensors.hasShape(g, ctx.inputShapes[i])) {
                    throw new IllegalStateException(ctx + " backward: gradient " + i + " has shape "
                            + java.util.Arrays.toString(Tensors.shape(g)) + " but the input has shape "
                            + java.util.Arrays.toString(ctx.inputShapes[i]));
                }
                // The anchor's result is not checked by LibTorch: match the input's dtype here.
                if (g.scalar_type().value != ctx.inputTypes[i].value) {
                    g = g.to(ctx.inputTypes[i]);
                }
                // A wrapper of our own: the backward may return tensors it does not own.
                ctx.setGradIn(i, new Tensor(g).retainReference());
            }
        } finally {
            for (Tensor g : gradOut) {
                if (g != null) {
                    g.releaseReference();
                }
            }
        }
        LOG.trace("{} backward done", ctx);
    }

    /**
     * After an input's anchor node (an empty index_select of the input, which computed nothing
     * from its undefined incoming gradient): replaces its output by the input's gradient.
     */
    private static final class InjectHook extends FunctionPostHook {
        private final Context ctx;
        private final int index;
        private final boolean viaView;

        InjectHook(Context ctx, int index, boolean viaView) {
            super();
            this.ctx = ctx;
            this.index = index;
            this.viaView = viaView;
        }

        @Override
        public TensorVector apply(TensorVector outputs, TensorVector inputs) {
            releaseReturned();
            Tensor g = ctx.takeGradIn(index);
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
            // with the function's state (right after this anchor, if it is the last one to run),
            // so that a gradient the size of an activation does not outlive the backward pass.
            Returned r = new Returned(out);
            RETURNED.get().add(r);
            ctx.keep(r);
            return out;
        }
    }
}
