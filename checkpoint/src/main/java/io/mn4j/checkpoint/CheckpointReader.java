package io.mn4j.checkpoint;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.bytedeco.pytorch.InputArchive;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.Tensor;

/**
 * One rank's view of the checkpoint a job resumes from ({@link Checkpointer#restore}): its own
 * part and the replicated part (read by rank 0 and broadcast). Every getter restores into the
 * caller's objects, which must be built as the saved ones were (same model, same optimizer over
 * the same parameters); asking for a name that was not saved throws, naming what was.
 */
public final class CheckpointReader implements AutoCloseable {
    private final long step;
    private final Manifest manifest;
    private final InputArchive own;
    private final InputArchive replicated;
    private final ObjectNode values;
    private final List<InputArchive> nested = new ArrayList<>();

    CheckpointReader(long step, Manifest manifest, InputArchive own, InputArchive replicated, ObjectNode values) {
        this.step = step;
        this.manifest = manifest;
        this.own = own;
        this.replicated = replicated;
        this.values = values;
    }

    /** The step the checkpoint was taken after. */
    public long step() {
        return step;
    }

    /** The job identity the checkpoint was saved with. */
    public Map<String, String> identity() {
        return Map.copyOf(manifest.identity());
    }

    /** Restores this rank's module {@code name} into {@code m}. */
    public void module(String name, Module m) {
        m.load(child(own, "modules", name, "module_"));
    }

    /** Restores this rank's optimizer {@code name} into {@code o}. */
    public void optimizer(String name, Optimizer o) {
        o.load(child(own, "optimizers", name, "optimizer_"));
    }

    /** This rank's tensor {@code name}. */
    public Tensor tensor(String name) {
        require("tensors", name);
        Tensor t = new Tensor();
        own.read("tensor_" + name, t);
        return t;
    }

    /** Restores the replicated module {@code name} (rank 0's copy) into {@code m}. */
    public void replicatedModule(String name, Module m) {
        m.load(child(replicated, "modules", "replicated:" + name, "module_"));
    }

    /** Restores the replicated optimizer {@code name} (rank 0's copy) into {@code o}. */
    public void replicatedOptimizer(String name, Optimizer o) {
        o.load(child(replicated, "optimizers", "replicated:" + name, "optimizer_"));
    }

    /** This rank's value {@code name}, read back as {@code type}. */
    public <T> T value(String name, Class<T> type) {
        require("values", name);
        JsonNode n = values.get(name);
        return ValueCodec.fromTree(n, type);
    }

    private InputArchive child(InputArchive parent, String kind, String name, String prefix) {
        require(kind, name);
        InputArchive a = new InputArchive();
        nested.add(a);
        parent.read(prefix + name.substring(name.indexOf(':') + 1), a);
        return a;
    }

    private void require(String kind, String name) {
        List<String> names = manifest.contents().getOrDefault(kind, List.of());
        if (!names.contains(name)) {
            throw new IllegalArgumentException("checkpoint " + step + " holds no " + kind.substring(0, kind.length() - 1) + " named '"
                    + name + "' (its " + kind + ": " + names + ")");
        }
    }

    @Override
    public void close() {
        nested.forEach(InputArchive::close);
        own.close();
        if (replicated != null) {
            replicated.close();
        }
    }
}
