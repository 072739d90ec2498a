package io.mn4j.checkpoint;

import io.mn4j.gnn.io.Npz;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.bytedeco.pytorch.InputArchive;
import org.bytedeco.pytorch.OutputArchive;
import org.bytedeco.pytorch.Tensor;

/**
 * A {@link StateDict} as a file, by the file's extension: {@code .npz} (numpy's archive of named
 * arrays, one entry per state-dict name) or {@code .pt} (LibTorch's archive as {@code torch::save}
 * writes a module: one nested archive per submodule, so {@code torch::load(module, file)} in C++
 * reads it into an equivalent module tree).
 */
final class ModelFiles {
    private ModelFiles() {
    }

    /** Whether {@code file} names a format this class reads and writes. */
    static void requireKnownFormat(Path file) {
        if (!isNpz(file) && !isArchive(file)) {
            throw new IllegalArgumentException(file + ": a model file ends in .npz (numpy) or .pt (LibTorch archive)");
        }
    }

    /** Writes {@code sd} to {@code file}: into a sibling first, renamed into place (a reader never sees half a file). */
    static void write(StateDict sd, Path file) throws IOException {
        requireKnownFormat(file);
        Path parent = file.toAbsolutePath().getParent();
        if (!Files.isDirectory(parent)) {
            throw new NoSuchFileException(parent.toString(), null, "the folder to export " + file.getFileName() + " into does not exist");
        }
        Path tmp = parent.resolve(file.getFileName() + ".tmp");
        Files.deleteIfExists(tmp);
        if (isNpz(file)) {
            Map<String, Tensor> arrays = new LinkedHashMap<>();
            for (String name : sd.names()) {
                arrays.put(name, sd.get(name));
            }
            Npz.write(tmp, arrays, false);
        } else {
            writeArchive(sd, tmp);
        }
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /**
     * Reads the tensors of {@code file}: all of a {@code .npz}; of a {@code .pt}, those of
     * {@code wanted} that it holds (a LibTorch archive does not list its nested keys).
     */
    static StateDict read(Path file, Collection<String> wanted) throws IOException {
        requireKnownFormat(file);
        if (!Files.isRegularFile(file)) {
            throw new NoSuchFileException(file.toString(), null, "no such model file");
        }
        StateDict sd = new StateDict();
        try {
            if (isNpz(file)) {
                try (Npz npz = Npz.open(file)) {
                    for (String name : npz.names()) {
                        sd.put(name, npz.read(name), false);
                    }
                }
            } else {
                readArchive(file, wanted, sd);
            }
        } catch (IOException | RuntimeException e) {
            sd.close();
            throw e;
        }
        return sd;
    }

    private static void writeArchive(StateDict sd, Path file) throws IOException {
        List<OutputArchive> keep = new ArrayList<>();
        OutputArchive root = new OutputArchive();
        keep.add(root);
        try {
            // Submodule archives are filled before they are registered in their parent, as Module::save does.
            Node tree = new Node();
            for (String name : sd.names()) {
                tree.add(name.split("\\."), 0, name);
            }
            tree.fill(root, sd, keep);
            ArchiveBytes.toFile(root, file);
        } finally {
            for (OutputArchive a : keep) {
                a.close();
            }
        }
    }

    private static void readArchive(Path file, Collection<String> wanted, StateDict into) {
        List<InputArchive> keep = new ArrayList<>();
        try {
            InputArchive root = ArchiveBytes.fromFile(file);
            keep.add(root);
            for (String name : wanted) {
                String[] path = name.split("\\.");
                InputArchive at = root;
                for (int i = 0; i < path.length - 1 && at != null; i++) {
                    InputArchive child = new InputArchive();
                    keep.add(child);
                    at = at.try_read(path[i], child) ? child : null;
                }
                Tensor t = new Tensor();
                if (at != null && at.try_read(path[path.length - 1], t)) {
                    into.put(name, t.detach().clone(), false);
                }
                t.close();
            }
        } finally {
            for (InputArchive a : keep) {
                a.close();
            }
        }
    }

    private static boolean isNpz(Path file) {
        return file.getFileName().toString().endsWith(".npz");
    }

    private static boolean isArchive(Path file) {
        return file.getFileName().toString().endsWith(".pt");
    }

    /** The module tree of dotted names: tensors at the leaves' parents, submodules below. */
    private static final class Node {
        final Map<String, String> tensors = new LinkedHashMap<>();
        final Map<String, Node> children = new LinkedHashMap<>();

        void add(String[] path, int at, String name) {
            if (at == path.length - 1) {
                tensors.put(path[at], name);
            } else {
                children.computeIfAbsent(path[at], k -> new Node()).add(path, at + 1, name);
            }
        }

        void fill(OutputArchive archive, StateDict sd, List<OutputArchive> keep) {
            for (Map.Entry<String, String> t : tensors.entrySet()) {
                archive.write(t.getKey(), sd.get(t.getValue()), sd.isBuffer(t.getValue()));
            }
            for (Map.Entry<String, Node> c : children.entrySet()) {
                OutputArchive child = new OutputArchive(archive.compilation_unit());
                keep.add(child);
                c.getValue().fill(child, sd, keep);
                archive.write(c.getKey(), child);
            }
        }
    }
}
