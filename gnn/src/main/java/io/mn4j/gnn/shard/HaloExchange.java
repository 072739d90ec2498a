package io.mn4j.gnn.shard;

import io.mn4j.functions.Functions;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import org.bytedeco.pytorch.Tensor;

/**
 * The aggregation ONE_SHOT and PIPELINED share: the local shard, plus the halo graph (every remote
 * shard side by side) applied to all the boundary rows this rank reads, received in one exchange.
 * The modes differ only in which rows they read: this one's fresh ones, or stale ones.
 */
final class HaloExchange {
    private final ShardLayout layout;
    private final EdgeWeights weights;
    private final Supplier<NodeNumbering> numbering;

    HaloExchange(ShardLayout layout, EdgeWeights weights, Supplier<NodeNumbering> numbering) {
        this.layout = layout;
        this.weights = weights;
        this.numbering = numbering;
    }

    /** The weighted sum over the local shard and the halo graph, reading the boundary rows {@code boundaryRows} gives for x. */
    Tensor sum(Tensor x, EdgeNorm norm, UnaryOperator<Tensor> boundaryRows) {
        Tensor local = weights.localSum(x, norm);
        if (layout.parts() == 1) {
            return local;
        }
        return local.add(weights.haloGraph(norm).apply(boundaryRows.apply(x)));
    }

    /** {@code op} over the local shard, merged with {@code op} over the halo graph reading {@code boundaryRows} of src. */
    Tensor apply(Tensor dst, Tensor src, ShardOperator op, UnaryOperator<Tensor> boundaryRows) {
        NodeNumbering ids = numbering.get();
        List<Tensor> state = op.shard(weights.localShard(op), ids.localEnds(), dst, op.sources(src));
        if (layout.parts() > 1) {
            state = op.combine(state, op.shard(weights.haloGraph(EdgeNorm.SUM).matrix(), ids.haloEnds(), dst,
                    op.sources(boundaryRows.apply(src))));
        }
        return op.finish(state);
    }

    /**
     * All remote rows this rank reads, concatenated in partner order (the column order of the
     * halo graph), through the differentiable alltoall: its backward sends the gradients home.
     */
    Tensor freshRows(Tensor x) {
        List<Tensor> sends = new ArrayList<>(layout.parts());
        for (int p = 0; p < layout.parts(); p++) {
            sends.add(x.index_select(0, layout.shard(p).sendRows));
        }
        List<Tensor> got = Functions.alltoall(layout.communicator(), sends);
        return layout.catPartners(got::get);
    }
}
