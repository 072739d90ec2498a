package io.mn4j.gnn.dist;

/** How a {@link GraphShardManager} aggregates over the shards of remote partitions (SAR's modes). */
public enum AggregationMode {
    /**
     * Mode 1, the default: forward without autograd, one remote shard at a time in a ring, each
     * fetched block freed at once; backward re-fetches and recomputes shards where the layer needs
     * it, or — for plain weighted sums — sends {@code A_jᵀ·grad} to the owners without re-fetching.
     */
    SAR,
    /** Mode 2 (SAR's {@code disable_sr}): the same ring, keeping the autograd graph; no recomputation. */
    SEQUENTIAL,
    /** Mode 3: one exchange of all boundary rows per layer, aggregated over the whole partition graph. */
    ONE_SHOT
}
