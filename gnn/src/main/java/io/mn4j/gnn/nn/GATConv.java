package io.mn4j.gnn.nn;

import io.mn4j.gnn.shard.GraphShardManager;
import io.mn4j.tensor.Scopes;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * Graph attention (Veličković et al.; PyG's {@code GATConv} with concatenated heads):
 * {@code h = x·W}, {@code α_uv = softmax_u LeakyReLU(a_srcᵀh_u + a_dstᵀh_v)} over the in-neighbours
 * of v and v itself, {@code out_v = ‖_heads Σ_u α_uv h_u + b}. The softmax spans every partition;
 * in SAR mode the backward recomputes it shard by shard. Attention dropout drops the coefficients
 * {@code α_uv} of the sum (not of the softmax's normaliser), as the paper and PyG do.
 */
public final class GATConv extends Module {
    private final Tensor weight;
    private final Tensor bias;
    private final GraphAttention attention;

    public GATConv(long in, int channelsPerHead, int heads) {
        super("GATConv");
        long out = (long) heads * channelsPerHead;
        this.weight = Init.parameter(this, "weight", Init.glorot(in, out, in, out));
        Tensor attSrc = Init.parameter(this, "att_src", Init.glorot(heads, channelsPerHead, 1, heads, channelsPerHead));
        Tensor attDst = Init.parameter(this, "att_dst", Init.glorot(heads, channelsPerHead, 1, heads, channelsPerHead));
        this.bias = Init.parameter(this, "bias", torch.zeros(out));
        this.attention = new GraphAttention(heads, channelsPerHead, attSrc, attDst, 0.2);
    }

    /** The layer without attention dropout (evaluation, or a model without dropout). */
    public Tensor forward(GraphShardManager graph, Tensor x) {
        return forward(graph, x, null, 0);
    }

    /**
     * The layer with attention dropout: each edge's coefficients dropped with probability {@code p}
     * by the mask {@code key} and the ids of the edge's ends decide ({@link Dropout#edgeMask}), the
     * same on any number of ranks and in every mode. A null key or p 0: no dropout.
     */
    public Tensor forward(GraphShardManager graph, Tensor x, DropoutKey key, double p) {
        // Temporaries the backward does not need are released here, not when the caller's scope ends.
        PointerScope outer = PointerScope.getInnerScope();
        try (PointerScope scope = new PointerScope()) {
            Tensor h = x.matmul(weight);
            return Scopes.escape(scope, outer, graph.aggregate(h, h, attention.dropping(key, p)).add(bias));
        }
    }
}
