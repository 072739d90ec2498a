package io.mn4j.gnn.shard;

import java.util.function.Function;

/** How a {@link GraphShardManager} aggregates over the shards of remote partitions (SAR's modes). */
public enum AggregationMode {
    /**
     * The default: forward without autograd, one remote shard at a time in a ring, each fetched
     * block freed at once; backward fetches and recomputes shards again where the layer needs it,
     * or — for plain weighted sums — sends {@code A_jᵀ·grad} to the owners without fetching.
     */
    SAR(SarAggregator::new),
    /** SAR's {@code disable_sr}: the same ring, keeping the autograd graph; no recomputation. */
    SEQUENTIAL(SequentialAggregator::new),
    /** One exchange of all boundary rows per layer, aggregated over the whole partition graph. */
    ONE_SHOT(OneShotAggregator::new),
    /**
     * PipeGCN's pipelined stale exchange: ONE_SHOT, except that the training passes read the
     * boundary rows (and, in backward, their gradients) that partners sent one epoch earlier, while
     * this epoch's go out without waiting; communication overlaps computation at the cost of one
     * epoch of staleness. The first epoch is exact (it waits), the second reads the first's rows;
     * passes without autograd (evaluation) read fresh rows. An epoch is one training forward and its
     * backward, started by {@link GraphShardManager#nextEpoch()}; every epoch makes the same
     * aggregations. {@link GraphShardManager#smoothing} adds PipeGCN's moving average, and
     * {@link GraphShardManager#staleness} lets a pass read rows up to that many epochs old.
     */
    PIPELINED(PipelinedAggregator::new);

    /** Each mode names its aggregator here, so that a new mode cannot compile without one. */
    private final Function<ShardResources, Aggregator> aggregator;

    AggregationMode(Function<ShardResources, Aggregator> aggregator) {
        this.aggregator = aggregator;
    }

    /** A new aggregator of this mode over {@code resources} (aggregators hold no state of their own). */
    Aggregator aggregator(ShardResources resources) {
        return aggregator.apply(resources);
    }
}
