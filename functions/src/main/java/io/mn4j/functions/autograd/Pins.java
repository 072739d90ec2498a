package io.mn4j.functions.autograd;

import io.mn4j.tensor.Scopes;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.pytorch.DeviceOptional;
import org.bytedeco.pytorch.PointerConsumer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/**
 * Pins: tiny tensors that tell their owner when LibTorch frees them, so that the Java objects an
 * autograd graph needs (hook function pointers, which C++ references only weakly) live exactly as
 * long as the graph holds the pin.
 *
 * <p>{@link #index} and {@link #leaf} make a tensor over 8 bytes of native memory with a deleter
 * and hold {@code owner} (strongly) until LibTorch frees that memory: when the last tensor or saved
 * variable holding it is gone (a node that saved it has run, its graph was destroyed, or the handle
 * was closed with nothing else holding it), {@code onRelease} is called once with the owner, on the
 * thread that frees it and without a lock of this class. The returned handle belongs to the caller
 * (and its {@code PointerScope}). Pins may be made and released on any thread. A registry is meant
 * to be a {@code static final} constant: a pin may be freed at any time after its last use.
 *
 * @param <T> the owner type
 */
public final class Pins<T> {
    /** Options and device of every pin, made once (each is a native object). */
    private static final TensorOptions INDEX_OPTIONS = Scopes.permanent(new TensorOptions(torch.ScalarType.Long));
    private static final TensorOptions LEAF_OPTIONS = Scopes.permanent(new TensorOptions(torch.ScalarType.Float));
    private static final DeviceOptional DEVICE = Scopes.permanent(new DeviceOptional());

    private final Map<Long, T> byAddress = new ConcurrentHashMap<>();
    private final Consumer<? super T> onRelease;
    private final PointerConsumer deleter;

    /** A registry that calls {@code onRelease} with the owner of each pin LibTorch frees. */
    public Pins(Consumer<? super T> onRelease) {
        this.onRelease = onRelease;
        this.deleter = Scopes.permanent(new PointerConsumer() {
            @Override
            public void call(Pointer p) {
                released(p);
            }
        });
    }


    /** An empty int64 index ({@code [0]}), for a node to save (e.g. with {@code index_select}). */
    public Tensor index(T owner) {
        return pin(owner, true);
    }

    /** A 0-dim float32 leaf that requires grad, for a graph to depend on. */
    public Tensor leaf(T owner) {
        return pin(owner, false);
    }

    /** Pins not yet freed (owners still held); for tests and leak checks. */
    public int live() {
        return byAddress.size();
    }

    private Tensor pin(T owner, boolean index) {
        Pointer memory = Pointer.calloc(1, 8);
        if (memory.isNull()) {
            throw new OutOfMemoryError("no memory for the pin of " + owner);
        }
        long key = memory.address();
        byAddress.put(key, owner);
        Tensor pin;
        try {
            pin = index
                    ? torch.from_blob(memory, new long[] {0}, new long[] {1}, deleter, INDEX_OPTIONS, DEVICE)
                    : torch.from_blob(memory, new long[0], new long[0], deleter, LEAF_OPTIONS, DEVICE);
        } catch (RuntimeException e) {
            byAddress.remove(key);
            Pointer.free(memory);
            throw e;
        }
        // From here the tensor owns the memory: its deleter frees it (and the entry) in any case.
        if (!index) {
            pin.requires_grad_(true);
        }
        return pin;
    }

    private void released(Pointer memory) {
        try {
            T owner = byAddress.remove(memory.address());
            if (owner != null) {
                onRelease.accept(owner);
            }
        } finally {
            Pointer.free(memory);
        }
    }
}
