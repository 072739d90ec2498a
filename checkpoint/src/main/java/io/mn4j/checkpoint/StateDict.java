package io.mn4j.checkpoint;

import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.StringTensorDict;
import org.bytedeco.pytorch.Tensor;

/**
 * A model's parameters and buffers by the names PyTorch's {@code state_dict()} gives them: the
 * dotted path of the module tree, as LibTorch's {@code named_parameters()} and
 * {@code named_buffers()} spell it ({@code l0.weight}, {@code layer1.att_src}). Holds CPU copies
 * of the values, released by {@link #close()}.
 */
public final class StateDict implements AutoCloseable {
    private final Map<String, Tensor> tensors = new LinkedHashMap<>();
    private final Set<String> buffers = new LinkedHashSet<>();

    /** An empty state dict, to {@link #put} into. */
    public StateDict() {
    }

    /** Copies of {@code module}'s parameters, then its buffers, in LibTorch's order. */
    public static StateDict of(Module module) {
        StateDict sd = new StateDict();
        add(sd, module.named_parameters(), false);
        add(sd, module.named_buffers(), true);
        return sd;
    }

    private static void add(StateDict sd, StringTensorDict named, boolean buffer) {
        for (long i = 0; i < named.size(); i++) {
            sd.put(named.get(i).key().getString(), named.get(i).value().detach().cpu().contiguous().clone(), buffer);
        }
    }

    /**
     * Adds a tensor, which this state dict then owns.
     *
     * @throws IllegalArgumentException if the name is taken
     */
    public void put(String name, Tensor t, boolean buffer) {
        if (tensors.containsKey(name)) {
            t.close();
            throw new IllegalArgumentException("two tensors are named '" + name + "'");
        }
        tensors.put(name, t);
        if (buffer) {
            buffers.add(name);
        }
    }

    /** The names, in order. */
    public List<String> names() {
        return new ArrayList<>(tensors.keySet());
    }

    /** The tensor of this name, or null. */
    public Tensor get(String name) {
        return tensors.get(name);
    }

    /** Whether the tensor of this name is a buffer (not a parameter). */
    public boolean isBuffer(String name) {
        return buffers.contains(name);
    }

    /** The buffers' names. */
    public Set<String> bufferNames() {
        return Collections.unmodifiableSet(buffers);
    }

    /** Number of tensors. */
    public int size() {
        return tensors.size();
    }

    /**
     * Copies the tensors named as {@code module}'s parameters and buffers into them; every one must
     * be there with the module's shape and type (extra tensors are left alone).
     *
     * @param source where the tensors came from, for messages
     * @return the names used
     * @throws IllegalArgumentException naming the first arrays that are missing or do not fit
     */
    public Set<String> copyInto(Module module, String source) {
        StringTensorDict[] targets = {module.named_parameters(), module.named_buffers()};
        List<String> problems = new ArrayList<>();
        for (StringTensorDict named : targets) {
            for (long i = 0; i < named.size(); i++) {
                String problem = fits(named.get(i).key().getString(), named.get(i).value());
                if (problem != null) {
                    problems.add(problem);
                }
            }
        }
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException(source + " does not fit the model: " + String.join("; ",
                    problems.subList(0, Math.min(5, problems.size()))) + (problems.size() > 5 ? "; and " + (problems.size() - 5)
                    + " more" : ""));
        }
        Set<String> used = new LinkedHashSet<>();
        try (NoGradGuard noGrad = new NoGradGuard()) {
            for (StringTensorDict named : targets) {
                for (long i = 0; i < named.size(); i++) {
                    String name = named.get(i).key().getString();
                    named.get(i).value().copy_(tensors.get(name));
                    used.add(name);
                }
            }
        }
        return used;
    }

    /** Why the tensor named {@code name} cannot be copied into {@code target}, or null. */
    private String fits(String name, Tensor target) {
        Tensor t = tensors.get(name);
        if (t == null) {
            return "no array '" + name + "' (the model's is " + Tensors.describe(target) + ")";
        }
        if (!Tensors.hasShape(t, Tensors.shape(target)) || Tensors.type(t) != Tensors.type(target)) {
            return "array '" + name + "' is " + Tensors.describe(t) + " but the model's is " + Tensors.describe(target);
        }
        return null;
    }

    @Override
    public void close() {
        for (Tensor t : tensors.values()) {
            t.close();
        }
        tensors.clear();
        buffers.clear();
    }
}
