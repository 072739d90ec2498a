package io.mn4j.gnn.shard;

import io.mn4j.functions.autograd.GradientBridge;
import java.util.function.Supplier;

/**
 * What every aggregator works with, owned and closed by the {@link GraphShardManager}.
 *
 * @param pipeline the current pipeline of PIPELINED mode (mode, smoothing and staleness start a new one)
 * @param numbering the ids random choices are keyed by (see {@link GraphShardManager#nodeIds(org.bytedeco.pytorch.Tensor)})
 * @param owner    the manager, named as the owner of the autograd functions aggregators create
 */
record ShardResources(ShardLayout layout, EdgeWeights weights, ShardSteps steps, Ring ring, GradientBridge.Registry bridges,
        Supplier<Pipeline> pipeline, Supplier<NodeNumbering> numbering, Object owner) {
}
