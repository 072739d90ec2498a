package io.mn4j.gnn.nn;

import io.mn4j.gnn.shard.EdgeNorm;
import io.mn4j.gnn.shard.GraphShardManager;
import io.mn4j.gnn.sampling.Block;
import io.mn4j.tensor.Scopes;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * GraphSAGE with the mean aggregator, {@code out = W_l · mean_(u→v) x_u + b + W_r · x_v} (PyG's
 * {@code SAGEConv}). Aggregates after the linear map when that makes rows narrower (the mean is
 * linear, so the result is the same).
 */
public final class SAGEConv extends Module {
    private final Tensor weightNeighbours;
    private final Tensor weightRoot;
    private final Tensor bias;
    private final boolean transformFirst;

    public SAGEConv(long in, long out) {
        super("SAGEConv");
        this.weightNeighbours = Init.parameter(this, "lin_l", Init.glorot(in, out, in, out));
        this.weightRoot = Init.parameter(this, "lin_r", Init.glorot(in, out, in, out));
        this.bias = Init.parameter(this, "bias", torch.zeros(out));
        this.transformFirst = out < in;
    }

    public Tensor forward(GraphShardManager graph, Tensor x) {
        // Temporaries the backward does not need are released here, not when the caller's scope ends.
        PointerScope outer = PointerScope.getInnerScope();
        try (PointerScope scope = new PointerScope()) {
            Tensor neighbours = transformFirst
                    ? graph.aggregate(x.matmul(weightNeighbours), EdgeNorm.MEAN)
                    : graph.aggregate(x, EdgeNorm.MEAN).matmul(weightNeighbours);
            return Scopes.escape(scope, outer, neighbours.add(bias).add(x.matmul(weightRoot)));
        }
    }

    /**
     * The layer on a sampled block: {@code xSrc} holds the rows of the block's sources, the
     * result those of its destinations (the first sources), [numDst, out].
     */
    public Tensor forward(Block block, Tensor xSrc) {
        PointerScope outer = PointerScope.getInnerScope();
        try (PointerScope scope = new PointerScope()) {
            Tensor neighbours = transformFirst
                    ? block.mean(xSrc.matmul(weightNeighbours))
                    : block.mean(xSrc).matmul(weightNeighbours);
            return Scopes.escape(scope, outer, neighbours.add(bias).add(block.dst(xSrc).matmul(weightRoot)));
        }
    }
}
