package io.mn4j.gnn.partition;

import io.mn4j.gnn.graph.Graph;
import io.mn4j.iterators.Permutations;

/**
 * A uniformly random balanced assignment: a seeded random permutation of the nodes dealt out
 * round-robin, so part sizes differ by at most one. The baseline every real partitioner must beat
 * on edge cut.
 */
public final class RandomPartitioner implements Partitioner {
    @Override
    public int[] partition(Graph g, int parts, long seed) {
        Partitioners.checkParts(parts);
        return assign(Math.toIntExact(g.numNodes()), parts, seed);
    }

    /** The assignment of {@code n} nodes (it needs no edges). */
    static int[] assign(int n, int parts, long seed) {
        int[] perm = Permutations.of(n, seed);
        int[] a = new int[n];
        for (int i = 0; i < n; i++) a[perm[i]] = i % parts;
        return a;
    }

    @Override
    public String name() {
        return "random";
    }
}
