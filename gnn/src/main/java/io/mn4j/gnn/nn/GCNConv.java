package io.mn4j.gnn.nn;

import io.mn4j.gnn.shard.EdgeNorm;
import io.mn4j.gnn.shard.GraphShardManager;
import io.mn4j.tensor.Scopes;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * Kipf and Welling's graph convolution, {@code out = D̂^-1/2 (A+I) D̂^-1/2 · x·W + b}, with
 * {@code D̂ = indeg + 1}, the in-degree not counting stored self-loops: every node has exactly one
 * (PyG's {@code GCNConv} with its remaining self-loops and normalisation). The linear map
 * comes first, so rows travel with the output width.
 */
public final class GCNConv extends Module {
    private final Tensor weight;
    private final Tensor bias;

    public GCNConv(long in, long out) {
        super("GCNConv");
        this.weight = Init.parameter(this, "weight", Init.glorot(in, out, in, out));
        this.bias = Init.parameter(this, "bias", torch.zeros(out));
    }

    public Tensor forward(GraphShardManager graph, Tensor x) {
        // x·W is not needed by backward: released here, not when the caller's scope ends. The bias
        // goes in place: the aggregation's result is fresh and nothing saves it.
        PointerScope outer = PointerScope.getInnerScope();
        try (PointerScope scope = new PointerScope()) {
            return Scopes.escape(scope, outer, graph.aggregate(x.matmul(weight), EdgeNorm.GCN).add_(bias));
        }
    }
}
