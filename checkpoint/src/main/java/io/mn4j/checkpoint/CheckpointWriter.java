package io.mn4j.checkpoint;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.regex.Pattern;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.OutputArchive;
import org.bytedeco.pytorch.StringTensorDict;
import org.bytedeco.pytorch.Tensor;

/**
 * What one rank puts into a checkpoint, handed to the callback of {@link Checkpointer#save}. Two
 * kinds of state: this rank's own (a model-parallel stage, a rank's iterator or random generator),
 * saved by every rank in its own part; and replicated state, the same on every rank
 * (data-parallel or GNN weights and their optimizer), saved once by rank 0 and, on every other
 * rank, only compared with rank 0's copy. Every rank must put the same names in the same order.
 */
public final class CheckpointWriter {
    private final OutputArchive own = new OutputArchive();
    private final OutputArchive replicated = new OutputArchive();
    private final ObjectNode values = ValueCodec.newObject();
    private final TreeMap<String, List<String>> contents = new TreeMap<>();
    private final List<OutputArchive> nested = new ArrayList<>();
    private final MessageDigest replicaDigest = DurableFiles.sha256();
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_]+");

    CheckpointWriter() {
    }

    /** This rank's module: its parameters and buffers. */
    public CheckpointWriter module(String name, Module m) {
        note("modules", name);
        nest(own, "module_" + name, m::save);
        return this;
    }

    /** This rank's optimizer: its options and per-parameter state (Adam's moments and step counts). */
    public CheckpointWriter optimizer(String name, Optimizer o) {
        note("optimizers", name);
        nest(own, "optimizer_" + name, o::save);
        return this;
    }

    /** A tensor of this rank's (a copy is taken now). */
    public CheckpointWriter tensor(String name, Tensor t) {
        note("tensors", name);
        own.write("tensor_" + name, t.detach().clone());
        return this;
    }

    /** A module that is the same on every rank: rank 0's copy is kept, the others are checked against it. */
    public CheckpointWriter replicatedModule(String name, Module m) {
        note("modules", "replicated:" + name);
        nest(replicated, "module_" + name, m::save);
        digestValues(name, m.named_parameters());
        digestValues(name, m.named_buffers());
        return this;
    }

    /** An optimizer whose state is the same on every rank (it steps on the same gradients): kept once, checked everywhere. */
    public CheckpointWriter replicatedOptimizer(String name, Optimizer o) {
        note("optimizers", "replicated:" + name);
        nest(replicated, "optimizer_" + name, o::save);
        return this;
    }

    /**
     * A value of this rank's, as JSON: a record, a number, a list, or a plain class with fields
     * Jackson can read back (doubles are kept exactly).
     */
    public CheckpointWriter value(String name, Object v) {
        note("values", name);
        values.set(name, ValueCodec.toTree(v));
        return this;
    }

    /** Adds names and raw bytes of {@code tensors} to the digest the replicas are compared by. */
    private void digestValues(String module, StringTensorDict tensors) {
        for (long i = 0; i < tensors.size(); i++) {
            replicaDigest.update((module + "." + tensors.get(i).key().getString() + "\n").getBytes(StandardCharsets.UTF_8));
            try (Tensor t = tensors.get(i).value().detach().cpu().contiguous()) {
                replicaDigest.update(new BytePointer(t.data_ptr()).capacity(t.nbytes()).asByteBuffer());
            }
        }
    }

    /**
     * SHA-256 of the replicated modules' parameter and buffer values: equal on every rank whose
     * replicas agree. (Archive bytes cannot be compared: LibTorch keys optimizer state by memory address.)
     */
    String replicaDigest() {
        return DurableFiles.hex(replicaDigest);
    }

    /** Fills a new archive, then registers it in {@code parent} under {@code key}. */
    private void nest(OutputArchive parent, String key, Consumer<OutputArchive> fill) {
        OutputArchive a = new OutputArchive();
        nested.add(a);
        fill.accept(a);
        parent.write(key, a);
    }

    private void note(String kind, String name) {
        if (!NAME.matcher(name.substring(name.indexOf(':') + 1)).matches()) {
            throw new IllegalArgumentException("checkpoint names are letters, digits and '_' (LibTorch's archive keys), got '"
                    + name + "'");
        }
        List<String> names = contents.computeIfAbsent(kind, k -> new ArrayList<>());
        if (names.contains(name)) {
            throw new IllegalArgumentException("a checkpoint holds one " + kind.substring(0, kind.length() - 1) + " named " + name);
        }
        names.add(name);
    }

    OutputArchive own() {
        return own;
    }

    OutputArchive replicated() {
        return replicated;
    }

    boolean hasReplicated() {
        return contents.values().stream().flatMap(List::stream).anyMatch(n -> n.startsWith("replicated:"));
    }

    ObjectNode values() {
        return values;
    }

    TreeMap<String, List<String>> contents() {
        return contents;
    }

    /** Releases the archives. */
    void close() {
        nested.forEach(OutputArchive::close);
        own.close();
        replicated.close();
    }
}
