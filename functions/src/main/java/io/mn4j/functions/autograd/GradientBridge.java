package io.mn4j.functions.autograd;

import io.mn4j.tensor.Scopes;
import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorBase;
import org.bytedeco.pytorch.TensorTensorHook;

/**
 * Joins values computed outside autograd to the tensors they were computed from, so that backward
 * delivers gradients that Java code computes: {@link #attach} routes a value's gradient through a
 * proxy of the inputs, whose hook adds what {@link #onInputGrad} computes once every attached
 * value's gradient is known. A {@link Registry} keeps each bridge and its hooks while a backward
 * may still reach them; the mechanism and its lifetime: {@code functions/README.md}, "How it works".
 */
public final class GradientBridge {
    /** Keeps bridges alive until their backward has run or their graph is gone. */
    public static final class Registry {
        private final List<GradientBridge> live = new ArrayList<>();
        /** Tensors a hook returned: LibTorch copies them after the hook returns, so they are closed later. */
        private final ConcurrentLinkedQueue<Tensor> returned = new ConcurrentLinkedQueue<>();

        void releaseLater(Tensor t) {
            returned.add(Scopes.unscoped(t));
        }

        /** Closes the handles of tensors earlier hooks returned (LibTorch holds its own references). */
        void drain() {
            Tensor t;
            while ((t = returned.poll()) != null) {
                t.close();
            }
        }

        synchronized void add(GradientBridge b) {
            // No cap: a bridge leaves when its graph does (see the pin), and one whose graph lives
            // may still be reached by a backward, which must find its hooks.
            live.add(b);
        }

        synchronized void remove(GradientBridge b) {
            live.remove(b);
        }

        public synchronized int size() {
            return live.size();
        }
    }

    /** Pins of bridges: LibTorch frees one when the node that saved it has run or is gone. */
    private static final Pins<GradientBridge> PINS = new Pins<>(GradientBridge::pinReleased);

    private final Registry registry;
    private final Tensor[] proxies;
    private final Tensor zero;
    private final List<TensorTensorHook> hooks = new ArrayList<>();
    private final List<Tensor> kept = new ArrayList<>();
    private int inputHooks;
    /** Input hooks run in the backward pass under way. */
    private int inputHooksRun;
    /** A backward pass has run a hook of this bridge and not yet its last input hook. */
    private boolean passRunning;
    private boolean graphGone;

    /** A bridge for one or more inputs (features, parameters) that backward must reach. */
    public GradientBridge(Registry registry, Tensor... inputs) {
        this.registry = registry;
        this.proxies = new Tensor[inputs.length];
        registry.drain();
        Tensor z = null;
        for (int i = 0; i < inputs.length; i++) {
            // A view, not a copy (x·1 would hold a copy of every input until backward): a distinct
            // autograd node whose hook sees the input's whole gradient.
            proxies[i] = inputs[i].view(Tensors.shape(inputs[i]));
            Tensor zi = proxies[i].sum().mul(new Scalar(0.0));
            z = z == null ? zi : z.add(zi);
        }
        // An empty selection of the first proxy (O(1)): its node saves the pin.
        Tensor first = proxies[0].dim() == 0 ? proxies[0].unsqueeze(0) : proxies[0];
        this.zero = z.add(first.index_select(0, PINS.index(this)).sum());
        registry.add(this);
    }

    /**
     * Tensors only the backward reads (activations a hook recomputes from): the bridge closes them
     * when it leaves (its graph gone, no backward under way).
     */
    public synchronized void keep(Tensor... ts) {
        for (Tensor t : ts) {
            if (t != null) {
                kept.add(t);
            }
        }
    }

    private synchronized void inputHookDone() {
        if (++inputHooksRun == inputHooks) {
            passEnded();
        }
    }

    /** The backward pass is over for this bridge: done, or ended by an exception in a hook. */
    private synchronized void passEnded() {
        inputHooksRun = 0;
        passRunning = false;
        leaveIfDone();
    }

    /**
     * The pin's node has freed its saved tensors (in a backward without retain_graph, after the
     * attached values' hooks and before the proxies') or is gone with the graph: no later backward
     * can reach this bridge.
     */
    private synchronized void pinReleased() {
        graphGone = true;
        leaveIfDone();
    }

    private synchronized void leaveIfDone() {
        if (graphGone && !passRunning) {
            kept.forEach(Tensor::close);
            kept.clear();
            registry.remove(this);
        }
    }

    /** Runs a hook's work; an exception ends the pass (no more hooks of it will run) and goes on. */
    private void inPass(Runnable work) {
        synchronized (this) {
            passRunning = true;
        }
        registry.drain();
        try {
            work.run();
        } catch (RuntimeException | Error e) {
            passEnded();
            throw e;
        }
    }

    /** {@code value} (computed without autograd) as a tensor whose gradient flows to the proxies. */
    public Tensor attach(Tensor value) {
        return value.add(zero);
    }

    /**
     * Calls {@code sink} with the gradient of {@code t} when backward reaches it: a handle of its
     * own on the engine's tensor, not a copy (the extra reference keeps autograd from accumulating
     * into it in place). The sink closes it when done.
     */
    public void onGrad(Tensor t, Consumer<Tensor> sink) {
        // Hooks outlive the caller's PointerScope (they run in backward): keep them out of it.
        TensorTensorHook hook = Scopes.unscoped(new TensorTensorHook() {
            @Override
            public TensorBase call(TensorBase grad) {
                inPass(() -> sink.accept(Scopes.unscoped(new Tensor(grad))));
                return grad;
            }
        });
        hooks.add(hook);
        t.register_hook(hook);
    }

    /**
     * When the gradient of input {@code i} is complete, {@code extra} maps it to a tensor that is
     * added to it (the contributions autograd could not see; null adds nothing). The bridge owns
     * what {@code extra} returns: it adds the gradient into it in place (no third buffer) and
     * passes it on; every other tensor {@code extra} makes in the calling thread is released when
     * the hook returns.
     */
    public void onInputGrad(int i, UnaryOperator<Tensor> extra) {
        inputHooks++;
        TensorTensorHook hook = Scopes.unscoped(new TensorTensorHook() {
            @Override
            public TensorBase call(TensorBase grad) {
                Tensor[] result = new Tensor[1];
                inPass(() -> {
                    try (PointerScope s = new PointerScope()) {
                        Tensor g = new Tensor(grad);
                        Tensor added = extra.apply(g);
                        result[0] = added == null ? g : added;
                        if (added != null) {
                            added.add_(g);
                        }
                        registry.releaseLater(result[0]);
                    }
                });
                inputHookDone();
                return result[0];
            }
        });
        hooks.add(hook);
        proxies[i].register_hook(hook);
    }

}
