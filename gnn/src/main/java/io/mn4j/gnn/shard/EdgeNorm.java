package io.mn4j.gnn.shard;

/** Per-edge weighting of a neighbourhood sum {@code out[v] = Σ_(u→v) w_uv · x[u]}. */
public enum EdgeNorm {
    /** w = 1. */
    SUM,
    /** w = 1 / indeg(v): the mean of the in-neighbours (0 for a node without in-edges). */
    MEAN,
    /**
     * Kipf and Welling's symmetric normalisation with self-loops:
     * {@code out[v] = x[v]/d̂_v + Σ x[u]/sqrt(d̂_u·d̂_v)}, {@code d̂ = indeg + 1}, the sum and the
     * in-degree over in-edges other than stored self-loops (every node gets exactly one loop).
     */
    GCN
}
