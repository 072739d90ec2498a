package io.mn4j.examples.gnn;

import io.mn4j.communicator.Communicator;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.partition.MetisPartitioner;
import io.mn4j.gnn.partition.PartitionData;
import io.mn4j.gnn.partition.PartitionReader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * Loading one partition per rank so that bad input gives every rank the same, clear outcome: each
 * rank tries its part, the ranks exchange their errors, and if any failed every rank throws a
 * {@link JobInputException} (with its own message, or the failing ranks' messages) at the same
 * point. No rank is left waiting in a collective.
 */
public final class Partitions {
    private Partitions() {
    }

    /** The partitioner used when none is named: METIS if {@code gpmetis} is installed, else the built-in LDG. */
    public static String defaultPartitioner() {
        return MetisPartitioner.isAvailable() ? "metis" : "ldg";
    }

    /**
     * Runs {@code body} on every rank (a rank with nothing to do may return null at once), then
     * agrees across {@code comm} whether it failed anywhere. Collective. The body must not
     * communicate: a rank failing inside a collective would leave the others in it.
     *
     * @param what what the body does, for messages ("loading partition 1 of /tmp/parts")
     * @return this rank's result when no rank failed
     * @throws JobInputException on every rank when any rank failed
     */
    public static <T> T agree(Communicator comm, String what, Callable<T> body) {
        T result = null;
        Exception error = null;
        try {
            result = body.call();
        } catch (Exception e) {
            error = e;
        }
        String mine = error == null ? null : what + ": " + describe(error);
        List<String> all = comm.allgatherObj(mine);
        List<String> failures = new ArrayList<>();
        for (int r = 0; r < all.size(); r++) {
            if (all.get(r) != null) {
                failures.add("rank " + r + ": " + all.get(r));
            }
        }
        if (failures.isEmpty()) {
            return result;
        }
        if (result instanceof AutoCloseable c) {
            try {
                c.close();
            } catch (Exception ignored) {
                // the failure being reported matters more
            }
        }
        String message = mine != null ? mine
                : "stopping because " + (failures.size() == 1 ? "another rank" : failures.size() + " other ranks") + " failed: "
                        + String.join("; ", failures);
        throw new JobInputException(message, error);
    }

    /** Loads this rank's partition of {@code dir} (partition k on rank k), agreed across ranks. */
    public static PartitionData load(Communicator comm, Path dir) {
        return agree(comm, "loading partition " + comm.rank() + " of " + dir,
                () -> PartitionReader.load(dir, comm.rank(), comm.size()));
    }

    /** Loads or generates the graph on {@code root} only (null elsewhere), agreed across ranks. */
    public static Graph loadOnRoot(Communicator comm, int root, GraphOptions source) {
        return agree(comm, "reading graph '" + source.data + "'", () -> comm.rank() == root ? source.load() : null);
    }

    private static String describe(Throwable e) {
        String m = e.getMessage();
        String type = e.getClass().getSimpleName();
        return m == null || m.isBlank() ? type : (e instanceof java.nio.file.NoSuchFileException ? "no such file " + m : m);
    }
}
