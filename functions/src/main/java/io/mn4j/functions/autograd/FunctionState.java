package io.mn4j.functions.autograd;

import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The state of one {@link CustomFunction}, shared by its hooks: the output gradients captured for
 * the {@link Backward}, the input gradients it computed, and what must be released when no
 * backward pass can run it again.
 */
final class FunctionState {
    private static final Logger LOG = LoggerFactory.getLogger(CustomFunction.class);
    /** Live functions by the address of their nodes (outputs and hub), for {@link CustomFunction#ownerOf}. */
    private static final Map<Long, FunctionState> BY_NODE = new ConcurrentHashMap<>();

    final long id;
    final String name;
    final Object owner;
    /** Null once released: it may hold what the caller captured, and the hooks outlive it. */
    private Backward backward;
    /** Why the backward must not run twice, or null (see {@link CustomFunction#apply}). */
    private final String onlyOnce;
    /** Whether the inputs have anchors (so an index pin; else the pin is the graph's leaf). */
    final boolean anchored;
    final int nIn;
    final int nOut;
    final boolean[] differentiable;
    private final long[][] inputShapes;
    private final torch.ScalarType[] inputTypes;
    private final List<Pointer> hooks = new ArrayList<>();
    private final List<Long> nodes = new ArrayList<>();
    private final Tensor[] gradOut;
    private final Tensor[] gradIn;
    /** Vectors handed to LibTorch by this function's input hooks, not yet released. */
    private final List<ReturnedVector> returned = new ArrayList<>();
    /** Whether the backward has started (once per backward pass that reaches the function). */
    private boolean ran;
    private boolean released;

    FunctionState(long id, String name, Object owner, Backward backward, String onlyOnce, List<Tensor> inputs,
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

    private static String deviceOf(Tensor x) {
        try (Device d = x.device()) {
            return d.str().getString();
        }
    }

    /** The function whose output or hub node is at {@code nodeAddress}, or null. */
    static FunctionState ofNode(long nodeAddress) {
        return BY_NODE.get(nodeAddress);
    }

    /** Keeps a hook object as long as the graph: C++ references it only weakly. */
    <H extends Pointer> H hold(H hook) {
        hooks.add(hook);
        return hook;
    }

    /** Remembers a node of this function (an output's or the hub's), for {@link #ofNode}. */
    void addNode(long nodeAddress) {
        nodes.add(nodeAddress);
    }

    /** Makes the nodes added so far findable by {@link #ofNode}, once the function is wired. */
    void registerNodes() {
        for (long address : nodes) {
            BY_NODE.put(address, this);
        }
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
    private synchronized Backward start() {
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
    synchronized void keep(ReturnedVector r) {
        if (!released) {
            returned.add(r);
        }
    }

    private synchronized List<Tensor> takeGradOut() {
        List<Tensor> out = new ArrayList<>(nOut);
        for (int j = 0; j < nOut; j++) {
            out.add(gradOut[j]);
            gradOut[j] = null;
        }
        return out;
    }

    private synchronized void setGradIn(int i, Tensor g) {
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

    /** Runs the Java backward on the captured output gradients and keeps the input gradients. */
    void runBackward() {
        List<Tensor> gradOutputs = takeGradOut();
        try (PointerScope scope = new PointerScope()) {
            List<Tensor> gradInputs;
            try {
                gradInputs = start().apply(Collections.unmodifiableList(gradOutputs));
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new RuntimeException(this + " backward: " + e.getMessage(), e);
            }
            if (gradInputs == null || gradInputs.size() != nIn) {
                throw new IllegalStateException(this + " backward returned "
                        + (gradInputs == null ? "null" : gradInputs.size() + " gradients") + " for "
                        + nIn + " inputs");
            }
            for (int i = 0; i < nIn; i++) {
                Tensor g = gradInputs.get(i);
                if (!differentiable[i] || g == null || !g.defined()) {
                    continue;
                }
                if (!Tensors.hasShape(g, inputShapes[i])) {
                    throw new IllegalStateException(this + " backward: gradient " + i + " has shape "
                            + Arrays.toString(Tensors.shape(g)) + " but the input has shape "
                            + Arrays.toString(inputShapes[i]));
                }
                // The anchor's result is not checked by LibTorch: match the input's dtype here.
                if (g.scalar_type().value != inputTypes[i].value) {
                    g = g.to(inputTypes[i]);
                }
                // A wrapper of our own: the backward may return tensors it does not own.
                setGradIn(i, new Tensor(g).retainReference());
            }
        } finally {
            for (Tensor g : gradOutputs) {
                if (g != null) {
                    g.releaseReference();
                }
            }
        }
        LOG.trace("{} backward done", this);
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
    private synchronized void release() {
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
        for (ReturnedVector r : returned) {
            r.release();
        }
        returned.clear();
    }

    @Override
    public String toString() {
        return name + "#" + id;
    }
}
