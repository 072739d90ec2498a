package io.mn4j.gnn.partition;

import io.mn4j.gnn.graph.Graph;
import java.util.List;
import java.util.Locale;

/** Partitioners by name, and shared helpers. */
public final class Partitioners {
    private Partitioners() {}

    /** The names {@link #byName} accepts. */
    public static final List<String> NAMES = List.of("metis", "ldg", "range", "random");

    /**
     * A partitioner by name: {@code metis} (Debian's {@code gpmetis}), {@code ldg} (built-in
     * streaming), {@code range} or {@code random}.
     */
    public static Partitioner byName(String name) {
        switch (name.toLowerCase(Locale.ROOT)) {
            case "metis": return new MetisPartitioner();
            case "ldg": return new LdgPartitioner();
            case "range": return new RangePartitioner();
            case "random": return new RandomPartitioner();
            default: throw new IllegalArgumentException("unknown partitioner '" + name + "' (known: " + NAMES + ")");
        }
    }

    static void checkParts(int parts) {
        if (parts < 1) throw new IllegalArgumentException("number of partitions must be >= 1, got " + parts);
    }

    /** The undirected simple graph behind g (symmetrized, no self loops), as arrays. */
    static Undirected undirected(Graph g) {
        try (Graph s = g.symmetrize(); Graph t = s.withoutSelfLoops()) {
            return new Undirected(t.adjacency().rowptrArray(), t.adjacency().colArray());
        }
    }

    /** CSR arrays of an undirected simple graph: every edge appears in both rows. */
    static final class Undirected {
        final long[] rowptr;
        final int[] col;

        Undirected(long[] rowptr, int[] col) {
            this.rowptr = rowptr;
            this.col = col;
        }
    }
}
