package io.mn4j.gnn.io;

import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Where Planetoid Cora ({@code cora.npz}: the public split, in the gnn-benchmark {@code .npz}
 * layout that {@link NpzGraphReader} reads) is on this machine, for the examples' {@code --data
 * cora} and for tests.
 */
public final class CoraFile {
    /** Environment variable with the path of {@code cora.npz}; wins over the search. */
    public static final String ENV = "MN4J_CORA";
    /**
     * Where {@code cora.npz} is looked for, relative to the working directory and to each of its
     * ancestors, nearest first, when {@value #ENV} is not set: a checkout's own
     * {@code datasets/}, or the {@code shared/} beside the checkout. The ancestors make it
     * independent of the module a test runs in (Surefire works in the module's folder).
     */
    public static final List<String> PLACES = List.of("datasets/cora.npz", "../shared/datasets/cora.npz");

    /**
     * Where this project's machines keep the shared data, tried last: a checkout outside their
     * {@code /work} (a temporary clone, say) has no {@code shared/} among its ancestors.
     */
    static final List<Path> LAST_RESORT = List.of(Path.of("/work/shared/datasets/cora.npz"));

    private CoraFile() {
    }

    /** {@value #ENV} if set, else the first of {@link #PLACES} that exists, else {@link #LAST_RESORT}. */
    public static Path find() throws NoSuchFileException {
        return find(System.getenv(ENV), Path.of("").toAbsolutePath(), LAST_RESORT);
    }

    /** {@link #find()} for a given value of {@value #ENV} (null: not set), working directory and last resorts. */
    static Path find(String env, Path workingDir, List<Path> lastResorts) throws NoSuchFileException {
        if (env != null && !env.isBlank()) {
            return Path.of(env);
        }
        Set<Path> tried = new LinkedHashSet<>(); // "/a/../shared" and "/../shared" are one place
        for (Path dir = workingDir; dir != null; dir = dir.getParent()) {
            for (String place : PLACES) {
                Path p = dir.resolve(place).normalize();
                if (Files.isRegularFile(p)) {
                    return p;
                }
                tried.add(p);
            }
        }
        for (Path p : lastResorts) {
            if (Files.isRegularFile(p)) {
                return p;
            }
            tried.add(p);
        }
        throw new NoSuchFileException("cora.npz", null, "not found; " + ENV + " is not set and none of these exists: "
                + tried.stream().map(Path::toString).collect(Collectors.joining(", "))
                + ". Set " + ENV + " to the file: Planetoid Cora with its public split in the gnn-benchmark .npz layout "
                + "(adj_*, attr_*, labels, train_idx, val_idx, test_idx)");
    }
}
