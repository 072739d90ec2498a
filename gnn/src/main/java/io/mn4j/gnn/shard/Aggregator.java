package io.mn4j.gnn.shard;

import org.bytedeco.pytorch.Tensor;

/**
 * How one {@link AggregationMode} aggregates over the shards. The manager checks the inputs and
 * runs each call in a pointer scope of its own, whose temporaries go when the call returns.
 */
interface Aggregator {
    /** See {@link GraphShardManager#aggregate(Tensor, EdgeNorm)}. */
    Tensor aggregate(Tensor x, EdgeNorm norm);

    /** See {@link GraphShardManager#aggregate(Tensor, Tensor, ShardOperator)}. */
    Tensor aggregate(Tensor dst, Tensor src, ShardOperator op);
}
