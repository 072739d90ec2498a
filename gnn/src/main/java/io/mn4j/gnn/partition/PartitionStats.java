package io.mn4j.gnn.partition;

import io.mn4j.gnn.graph.Graph;
import java.util.Arrays;

/**
 * Quality of a node partitioning for full-graph GNN training, where an edge belongs to its
 * destination's partition and a partition must receive the features of every remote source of
 * its in-edges.
 *
 * <ul>
 *   <li>{@link #edgeCut()}: directed edges (entries of the in-edge CSR) whose source and
 *       destination are in different partitions (an undirected edge stored both ways counts twice);
 *   <li>{@link #nodeBalance()}, {@link #edgeBalance()}: largest partition over the mean, by nodes
 *       and by in-edges (1.0 is perfect);
 *   <li>{@link #commVolume()}: {@code [p][q]} = number of distinct nodes owned by {@code p} that
 *       are sources of in-edges of nodes owned by {@code q} ({@code p != q}), i.e. the rows
 *       {@code p} sends to {@code q} per layer in one-shot aggregation.
 * </ul>
 */
public final class PartitionStats {
    private final int parts;
    private final long numNodes;
    private final long numEdges;
    private final long[] partNodes;
    private final long[] partEdges;
    private final long edgeCut;
    private final long[][] commVolume;

    private PartitionStats(int parts, long numNodes, long numEdges, long[] partNodes, long[] partEdges, long edgeCut, long[][] commVolume) {
        this.parts = parts;
        this.numNodes = numNodes;
        this.numEdges = numEdges;
        this.partNodes = partNodes;
        this.partEdges = partEdges;
        this.edgeCut = edgeCut;
        this.commVolume = commVolume;
    }

    /** Statistics counted elsewhere (by a pass over a graph on disk): the arrays are the caller's no longer. */
    static PartitionStats of(int parts, long numNodes, long numEdges, long[] partNodes, long[] partEdges, long edgeCut, long[][] commVolume) {
        return new PartitionStats(parts, numNodes, numEdges, partNodes, partEdges, edgeCut, commVolume);
    }

    /**
     * Computes the statistics of an assignment (O(edges + nodes + parts^2)).
     *
     * @throws IllegalArgumentException if the assignment has the wrong length or a value outside {@code [0, parts)}
     */
    public static PartitionStats compute(Graph g, int[] assignment, int parts) {
        Partitioners.checkParts(parts);
        int n = Math.toIntExact(g.numNodes());
        checkAssignment(assignment, n, parts);
        long[] rp = g.adjacency().rowptrArray();
        int[] col = g.adjacency().colArray();
        long[] nodes = new long[parts];
        long[] edges = new long[parts];
        for (int v = 0; v < n; v++) {
            nodes[assignment[v]]++;
            edges[assignment[v]] += rp[v + 1] - rp[v];
        }
        // Visit destinations grouped by partition so one stamp per source suffices to count
        // distinct (source, needing partition) pairs.
        int[] byPartStart = new int[parts + 1];
        for (int v = 0; v < n; v++) byPartStart[assignment[v] + 1]++;
        for (int p = 0; p < parts; p++) byPartStart[p + 1] += byPartStart[p];
        int[] byPart = new int[n];
        int[] fill = Arrays.copyOf(byPartStart, parts);
        for (int v = 0; v < n; v++) byPart[fill[assignment[v]]++] = v;
        int[] stamp = new int[n];
        Arrays.fill(stamp, -1);
        long cut = 0;
        long[][] vol = new long[parts][parts];
        for (int q = 0; q < parts; q++) {
            for (int k = byPartStart[q]; k < byPartStart[q + 1]; k++) {
                int v = byPart[k];
                for (long e = rp[v]; e < rp[v + 1]; e++) {
                    int u = col[(int) e];
                    int p = assignment[u];
                    if (p == q) continue;
                    cut++;
                    if (stamp[u] != q) {
                        stamp[u] = q;
                        vol[p][q]++;
                    }
                }
            }
        }
        return new PartitionStats(parts, n, rp[n], nodes, edges, cut, vol);
    }

    static void checkAssignment(int[] assignment, long n, int parts) {
        if (assignment.length != n) throw new IllegalArgumentException("assignment has " + assignment.length + " entries for " + n + " nodes");
        for (int v = 0; v < assignment.length; v++) {
            if (assignment[v] < 0 || assignment[v] >= parts) {
                throw new IllegalArgumentException("node " + v + " is assigned to partition " + assignment[v] + ", outside [0," + parts + ")");
            }
        }
    }

    public int parts() { return parts; }

    public long numNodes() { return numNodes; }

    public long numEdges() { return numEdges; }

    /** Nodes per partition (a copy). */
    public long[] partNodes() { return partNodes.clone(); }

    /** In-edges per partition (edges whose destination it owns; a copy). */
    public long[] partEdges() { return partEdges.clone(); }

    /** Directed edges between partitions. */
    public long edgeCut() { return edgeCut; }

    /** {@link #edgeCut()} over all edges. */
    public double cutFraction() { return numEdges == 0 ? 0 : (double) edgeCut / numEdges; }

    /** Largest partition by nodes over the mean. */
    public double nodeBalance() { return balance(partNodes, numNodes); }

    /** Largest partition by in-edges over the mean. */
    public double edgeBalance() { return balance(partEdges, numEdges); }

    /** {@code [owner][needer]} boundary rows (a copy); the diagonal is 0. */
    public long[][] commVolume() {
        long[][] c = new long[parts][];
        for (int p = 0; p < parts; p++) c[p] = commVolume[p].clone();
        return c;
    }

    /** Boundary rows {@code owner} sends to {@code needer}. */
    public long commVolume(int owner, int needer) { return commVolume[owner][needer]; }

    /** Total boundary rows over all partition pairs. */
    public long totalCommVolume() {
        long t = 0;
        for (long[] row : commVolume) for (long x : row) t += x;
        return t;
    }

    /** Rows partition {@code q} receives from all others. */
    public long received(int q) {
        long t = 0;
        for (int p = 0; p < parts; p++) t += commVolume[p][q];
        return t;
    }

    private double balance(long[] per, long total) {
        if (total == 0) return 1.0;
        long max = 0;
        for (long x : per) max = Math.max(max, x);
        return max / ((double) total / parts);
    }

    /** One line: parts, cut, balance, volume. */
    @Override
    public String toString() {
        return String.format("parts=%d nodes=%d edges=%d edgeCut=%d (%.2f%%) nodeBalance=%.3f edgeBalance=%.3f commVolume=%d rows",
                parts, numNodes, numEdges, edgeCut, 100 * cutFraction(), nodeBalance(), edgeBalance(), totalCommVolume());
    }
}
