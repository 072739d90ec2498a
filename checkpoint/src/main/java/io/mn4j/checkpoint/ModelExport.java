package io.mn4j.checkpoint;

import io.mn4j.communicator.Agreement;
import io.mn4j.communicator.Communicator;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;

/**
 * Exports a trained model for use outside the JVM, and loads it back: its parameters and buffers
 * under PyTorch's {@code state_dict} names, as a {@code .npz} (numpy; in PyTorch
 * {@code {k: torch.from_numpy(v) for k, v in np.load(f).items()}} is a state dict) or a LibTorch
 * archive {@code .pt} ({@code torch::save}'s format), chosen by the extension. Every method is
 * collective; bad input (a missing folder, a file that does not fit the model) is a
 * {@link io.mn4j.communicator.JobInputException} on every rank that names the file and the array.
 */
public final class ModelExport {
    /** Tag of the point-to-point messages that gather the stages. */
    private static final int TAG = 0x6d65;

    /** How the model is spread over the ranks, and so who writes what. */
    public enum Layout {
        /** Every rank holds the same model (data parallelism): rank 0 writes it. */
        REPLICATED,
        /** Every rank holds its own part (a model-parallel stage) with names of its own: rank 0 gathers them into one file. */
        GATHERED,
        /** Every rank holds its own part and writes it into its own file, {@link #rankFile}. */
        PER_RANK
    }

    private ModelExport() {
    }

    /** The file of rank {@code rank} in a {@link Layout#PER_RANK} export: {@code model.npz} becomes {@code model.rank-1.npz}. */
    public static Path rankFile(Path file, int rank) {
        String name = file.getFileName().toString();
        int dot = name.lastIndexOf('.');
        String ranked = dot < 0 ? name + ".rank-" + rank : name.substring(0, dot) + ".rank-" + rank + name.substring(dot);
        return file.resolveSibling(ranked);
    }

    /**
     * Writes {@code module}'s parameters and buffers to {@code file} (its folder must exist; an
     * existing file is replaced). Collective.
     *
     * @return the file this rank wrote, or null
     */
    public static Path save(Communicator comm, Module module, Path file, Layout layout) {
        ModelFiles.requireKnownFormat(file);
        try (StateDict mine = StateDict.of(module)) {
            Path target = switch (layout) {
                case REPLICATED, GATHERED -> comm.rank() == 0 ? file : null;
                case PER_RANK -> rankFile(file, comm.rank());
            };
            StateDict all = layout == Layout.GATHERED ? gather(comm, mine) : mine;
            try {
                Agreement.agree(comm, "exporting the model to " + target, () -> {
                    if (target != null) {
                        ModelFiles.write(all, target);
                    }
                    return null;
                });
            } finally {
                if (all != mine && all != null) {
                    all.close();
                }
            }
            return target;
        }
    }

    /**
     * Loads {@code file} into {@code module}: every parameter and buffer by its name, of the same
     * shape and type. Every rank reads {@code file}, or its {@link #rankFile} when only that
     * exists, and takes the arrays its part names; a {@code .npz} array that no rank's part names
     * is an error too (the file is of another model). Collective.
     */
    public static void load(Communicator comm, Module module, Path file) {
        ModelFiles.requireKnownFormat(file);
        Path mine = Files.exists(file) || !Files.exists(rankFile(file, comm.rank())) ? file : rankFile(file, comm.rank());
        List<String> wanted;
        try (StateDict own = StateDict.of(module)) {
            wanted = own.names();
        }
        TreeSet<String> inFile = new TreeSet<>();
        Agreement.agree(comm, "loading the model from " + mine, () -> {
            try (StateDict sd = ModelFiles.read(mine, wanted)) {
                inFile.addAll(sd.names());
                sd.copyInto(module, mine.toString());
            }
            return null;
        });
        Set<String> used = new TreeSet<>();
        for (ArrayList<String> names : comm.allgatherObj(new ArrayList<>(wanted))) {
            used.addAll(names);
        }
        inFile.removeAll(used);
        Agreement.noProblems(comm, "loading the model from " + file, inFile.isEmpty() ? null
                : mine + " holds arrays that are in no rank's model: " + inFile);
    }

    /** Rank 0: every rank's tensors in one state dict; elsewhere null. Names must differ across ranks. */
    private static StateDict gather(Communicator comm, StateDict mine) {
        List<ArrayList<String>> names = comm.allgatherObj(new ArrayList<>(mine.names()));
        List<ArrayList<String>> buffers = comm.allgatherObj(new ArrayList<>(mine.bufferNames()));
        Map<String, Integer> owner = new HashMap<>();
        List<String> clashes = new ArrayList<>();
        for (int r = 0; r < names.size(); r++) {
            for (String n : names.get(r)) {
                Integer before = owner.putIfAbsent(n, r);
                if (before != null) {
                    clashes.add("'" + n + "' on ranks " + before + " and " + r);
                }
            }
        }
        Agreement.noProblems(comm, "gathering the model's parts", comm.rank() == 0 && !clashes.isEmpty()
                ? "the parts' names must differ to go into one file, but " + String.join(", ", clashes) : null);
        if (comm.rank() != 0) {
            for (String n : mine.names()) {
                comm.send(mine.get(n), 0, TAG);
            }
            return null;
        }
        StateDict all = new StateDict();
        for (int r = 0; r < names.size(); r++) {
            for (String n : names.get(r)) {
                Tensor t = r == 0 ? mine.get(n).clone() : comm.recv(r, TAG);
                all.put(n, t, buffers.get(r).contains(n));
            }
        }
        return all;
    }
}
