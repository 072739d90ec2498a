package io.mn4j.gnn.shard;

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
    ONE_SHOT,
    /**
     * Mode 4, PipeGCN's pipelined stale exchange: mode 3, except that the training passes read the
     * boundary rows (and, in backward, their gradients) that partners sent one epoch earlier, while
     * this epoch's go out without waiting; communication overlaps computation at the cost of one
     * epoch of staleness. The first epoch is exact (it waits), the second reads the first's rows;
     * passes without autograd (evaluation) read fresh rows. An epoch is one training forward and its
     * backward, started by {@link GraphShardManager#nextEpoch()}; every epoch makes the same
     * aggregations. {@link GraphShardManager#smoothing} adds PipeGCN's moving average, and
     * {@link GraphShardManager#staleness} lets a pass read rows up to that many epochs old.
     */
    PIPELINED
}
