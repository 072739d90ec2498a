package io.mn4j.gnn.partition;

import io.mn4j.gnn.graph.Graph;

/**
 * Contiguous ranges of node ids: node {@code v} goes to partition {@code floor(v * parts / n)}, so
 * part sizes differ by at most one. Good when node ids already follow locality (e.g. a graph
 * ordered by a previous partitioning), and as a baseline.
 */
public final class RangePartitioner implements Partitioner {
    @Override
    public int[] partition(Graph g, int parts, long seed) {
        Partitioners.checkParts(parts);
        return assign(Math.toIntExact(g.numNodes()), parts);
    }

    /** The assignment of {@code n} nodes (it needs no edges). */
    static int[] assign(int n, int parts) {
        int[] a = new int[n];
        for (int v = 0; v < n; v++) a[v] = (int) ((long) v * parts / n);
        return a;
    }

    @Override
    public String name() {
        return "range";
    }
}
