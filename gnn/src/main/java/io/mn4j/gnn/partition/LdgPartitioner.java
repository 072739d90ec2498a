package io.mn4j.gnn.partition;

import io.mn4j.gnn.graph.Graph;
import io.mn4j.iterators.Permutations;
import java.util.Arrays;

/**
 * Streaming Linear Deterministic Greedy partitioning (Stanton and Kliot, KDD 2012) with
 * restreaming (Nishimura and Ugander, KDD 2013); needs nothing outside the JVM.
 *
 * <p>Nodes arrive in a seeded random order. Node {@code v} goes to the partition {@code i} that
 * maximises {@code |N(v) ∩ P_i| * (1 - |P_i| / C)}, where {@code N(v)} are its neighbours in the
 * undirected graph and {@code C = ceil(n / parts) * (1 + slack)} is a hard capacity (full
 * partitions are skipped; ties go to the smaller partition, then the lower index). Each further
 * pass re-assigns every node in the same way, counting neighbours by their latest assignment, which
 * lowers the cut considerably. Time O(passes * (edges + nodes * parts)).
 */
public final class LdgPartitioner implements Partitioner {
    private final int passes;
    private final double slack;

    /** Five passes, 3% slack. */
    public LdgPartitioner() {
        this(5, 0.03);
    }

    /**
     * @param passes number of streaming passes (1 is plain LDG)
     * @param slack allowed imbalance: partitions hold at most {@code ceil(n/parts) * (1 + slack)} nodes
     */
    public LdgPartitioner(int passes, double slack) {
        if (passes < 1) throw new IllegalArgumentException("passes must be >= 1");
        if (slack < 0) throw new IllegalArgumentException("slack must be >= 0");
        this.passes = passes;
        this.slack = slack;
    }

    @Override
    public int[] partition(Graph g, int parts, long seed) {
        Partitioners.checkParts(parts);
        int n = Math.toIntExact(g.numNodes());
        if (parts == 1 || n == 0) return new int[n];
        Partitioners.Undirected u = Partitioners.undirected(g);
        return partition(n, parts, seed, (order, visit) -> {
            for (int v : order) visit.row(v, u.col, (int) u.rowptr[v], (int) u.rowptr[v + 1]);
        });
    }

    /** The rows of an undirected simple graph (no self loops, no repeated neighbour), handed out in a given order. */
    interface Rows {
        /** Calls {@code visit} once per node, in {@code order}; may throw {@link java.io.UncheckedIOException}. */
        void forEach(int[] order, RowVisitor visit);
    }

    /** Receives one node's neighbours {@code nbr[from..to)}. */
    interface RowVisitor {
        void row(int v, int[] nbr, int from, int to);
    }

    /**
     * The passes over rows from any source, nodes in the order {@link Permutations#of}{@code (n, seed)}:
     * the same assignment as {@link #partition(Graph, int, long)} on the graph of those rows.
     */
    int[] partition(int n, int parts, long seed, Rows rows) {
        Partitioners.checkParts(parts);
        int[] assign = new int[n];
        if (parts == 1 || n == 0) return assign;
        int[] order = Permutations.of(n, seed);
        double cap = Math.ceil((double) n / parts) * (1 + slack);
        Arrays.fill(assign, -1);
        long[] size = new long[parts];
        int[] count = new int[parts];
        int[] touched = new int[parts];
        for (int pass = 0; pass < passes; pass++) {
            Arrays.fill(size, 0);
            // In later passes a node's previous assignment counts until it is re-assigned; sizes
            // count only nodes placed in this pass, so capacities hold for the final result.
            rows.forEach(order, (v, nbr, from, to) -> {
                int nt = 0;
                for (int e = from; e < to; e++) {
                    int p = assign[nbr[e]];
                    if (p < 0) continue;
                    if (count[p]++ == 0) touched[nt++] = p;
                }
                int best = -1;
                double bestScore = Double.NEGATIVE_INFINITY;
                for (int p = 0; p < parts; p++) {
                    if (size[p] >= cap) continue;
                    double score = count[p] * (1.0 - size[p] / cap);
                    if (score > bestScore || (score == bestScore && best >= 0 && size[p] < size[best])) {
                        best = p;
                        bestScore = score;
                    }
                }
                for (int k = 0; k < nt; k++) count[touched[k]] = 0;
                assign[v] = best;
                size[best]++;
            });
        }
        return assign;
    }

    @Override
    public String name() {
        return "ldg";
    }
}
