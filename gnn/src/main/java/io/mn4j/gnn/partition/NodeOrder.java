package io.mn4j.gnn.partition;

import java.util.Arrays;
import java.util.Locale;

/**
 * The order of a partition's nodes among its new ids (see {@link PartitionBuilder}).
 *
 * <p>{@link #NONE} keeps increasing original id. {@link #RCM} is a reverse Cuthill–McKee order of
 * the partition's own subgraph (edges to other partitions are ignored): breadth-first from a
 * node of least degree, the unvisited neighbours of each node taken in increasing degree, every
 * connected component in turn, the whole sequence reversed. Neighbours then get nearby ids, so
 * the rows a sparse aggregation gathers for one output row tend to lie near each other in memory.
 * Any order gives the same training up to float rounding: node data, labels, masks and the map to
 * original ids move with the nodes, and random masks are keyed by original id.
 */
public enum NodeOrder {
    /** Increasing original id (the layout before node orders existed). */
    NONE,
    /** Reverse Cuthill–McKee inside each partition. */
    RCM;

    /** The order named {@code name} ({@code none} or {@code rcm}, any case). */
    public static NodeOrder byName(String name) {
        try {
            return valueOf(name.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("unknown node order '" + name + "' (known: none, rcm)", e);
        }
    }

    /** The name as options spell it: {@code none} or {@code rcm}. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * Puts the nodes of one partition in this order.
     *
     * @param rowptr the graph's CSR row pointers (row v: the in-edges of node v)
     * @param col the graph's CSR columns (sources, graph node ids)
     * @param nodes the partition's nodes (graph node ids, distinct); not modified
     * @return {@code nodes} in this order (a new array, or {@code nodes} itself for {@link #NONE})
     */
    public long[] order(long[] rowptr, int[] col, long[] nodes) {
        return this == NONE ? nodes : reverseCuthillMcKee(rowptr, col, nodes);
    }

    private static long[] reverseCuthillMcKee(long[] rowptr, int[] col, long[] nodes) {
        int m = nodes.length;
        int[] local = new int[rowptr.length - 1];
        Arrays.fill(local, -1);
        for (int i = 0; i < m; i++) local[(int) nodes[i]] = i;
        int[] degree = new int[m];
        for (int i = 0; i < m; i++) {
            int v = (int) nodes[i];
            for (long e = rowptr[v]; e < rowptr[v + 1]; e++) {
                if (local[col[(int) e]] >= 0) degree[i]++;
            }
        }
        // Start nodes: every component from its unvisited node of least degree.
        long[] byDegree = new long[m];
        for (int i = 0; i < m; i++) byDegree[i] = ((long) degree[i] << 32) | i;
        Arrays.sort(byDegree);
        int[] queue = new int[m];
        boolean[] seen = new boolean[m];
        long[] keys = new long[16];
        int head = 0, tail = 0;
        for (long start : byDegree) {
            int s = (int) start;
            if (seen[s]) continue;
            seen[s] = true;
            queue[tail++] = s;
            while (head < tail) {
                int v = (int) nodes[queue[head++]];
                int found = 0;
                for (long e = rowptr[v]; e < rowptr[v + 1]; e++) {
                    int u = local[col[(int) e]];
                    if (u < 0 || seen[u]) continue;
                    seen[u] = true;
                    if (found == keys.length) keys = Arrays.copyOf(keys, 2 * found);
                    keys[found++] = ((long) degree[u] << 32) | u;
                }
                Arrays.sort(keys, 0, found);
                for (int j = 0; j < found; j++) queue[tail++] = (int) keys[j];
            }
        }
        long[] ordered = new long[m];
        for (int j = 0; j < m; j++) ordered[j] = nodes[queue[m - 1 - j]];
        return ordered;
    }
}
