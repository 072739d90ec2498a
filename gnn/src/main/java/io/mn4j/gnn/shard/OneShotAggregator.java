package io.mn4j.gnn.shard;

import org.bytedeco.pytorch.Tensor;

/** ONE_SHOT (SAR's full partition graph): one exchange of all boundary rows per aggregation, differentiable. */
final class OneShotAggregator implements Aggregator {
    private final HaloExchange halo;

    OneShotAggregator(ShardResources resources) {
        this.halo = new HaloExchange(resources.layout(), resources.weights(), resources.numbering());
    }

    @Override
    public Tensor aggregate(Tensor x, EdgeNorm norm) {
        return halo.sum(x, norm, halo::freshRows);
    }

    @Override
    public Tensor aggregate(Tensor dst, Tensor src, ShardOperator op) {
        return halo.apply(dst, src, op, halo::freshRows);
    }
}
