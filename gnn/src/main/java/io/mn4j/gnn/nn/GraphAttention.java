package io.mn4j.gnn.nn;

import io.mn4j.gnn.dist.ShardOperator;
import io.mn4j.gnn.graph.Csr;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.pytorch.LongOptional;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.ScalarTypeOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptional;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * GAT's attention aggregation as a {@link ShardOperator}: multi-head, LeakyReLU scores, softmax
 * over all in-neighbours (self included) across every shard, by an online softmax: each shard
 * keeps per node and head a running max {@code m}, a sum {@code s = Σ exp(e − m)} and a weighted
 * sum {@code o = Σ exp(e − m)·h_u}; merging rescales to the larger max.
 *
 * <p>Rows (both {@code dst} and {@code src}) are the projected features {@code h = x·W}, [n, H·C].
 * Messages are summed with {@code embedding_bag} per head, so no [edges, H, C] tensor is made; in
 * the rematerialized backward its gradients are sparse, so a step costs what its edges cost.
 */
final class GraphAttention implements ShardOperator {
    /** Stands for −∞ in running maxima (finite, so that merging two empty states stays 0, not NaN). */
    private static final double NO_EDGE = -1e30;

    private final int heads;
    private final int channels;
    private final Tensor attSrc;
    private final Tensor attDst;
    private final double slope;

    GraphAttention(int heads, int channels, Tensor attSrc, Tensor attDst, double slope) {
        this.heads = heads;
        this.channels = channels;
        this.attSrc = attSrc;
        this.attDst = attDst;
        this.slope = slope;
    }

    /**
     * The source logits {@code a_src·h_u} [n, H], then each head's rows [n, C], split by
     * {@code unbind} from one head-major copy (its backward is one stack). {@code embedding_bag}
     * would copy a strided table at every call; computed once per block, a step's work follows
     * its edges.
     */
    @Override
    public List<Tensor> sources(Tensor src) {
        List<Tensor> out = new ArrayList<>(1 + heads);
        out.add(headDot(src, attSrc));
        Tensor byHead = src.view(-1, heads, channels).permute(1, 0, 2).contiguous();
        TensorVector perHead = byHead.unbind(0);
        for (int k = 0; k < heads; k++) {
            out.add(new Tensor(perHead.get(k)));
        }
        byHead.close();
        return out;
    }

    /** Scores e[edge, head] = LeakyReLU(a_src·h_u + a_dst·h_v). */
    private Tensor scores(Csr edges, Tensor dst, List<Tensor> sources, Tensor row) {
        Tensor ad = headDot(dst, attDst);
        Tensor e = sources.get(0).index_select(0, edges.col()).add(ad.index_select(0, row));
        return torch.leaky_relu(e, new Scalar(slope));
    }

    /** a[head]·h[n, head] for every row and head: [n, H]. */
    private Tensor headDot(Tensor rows, Tensor att) {
        // The product is as large as the rows; freed now rather than with the caller's scope
        // (autograd keeps what it needs by its own reference).
        Tensor product = rows.view(-1, heads, channels).mul(att);
        Tensor dot = product.sum(new long[] {-1}, false, new ScalarTypeOptional());
        product.close();
        return dot;
    }

    /**
     * Σ_(u→v) w[edge, head]·h_u[head] for every head: [n, H, C]. {@code sparse}: the rows'
     * gradients as sparse tensors of the edges' rows rather than dense tables.
     */
    private Tensor weightedSum(Csr edges, List<Tensor> sources, Tensor w, boolean sparse) {
        long n = edges.numRows();
        if (edges.nnz() == 0) {
            // Zero, yet connected to the sources and weights, so that their gradients (zero) are defined.
            return torch.zeros(new long[] {n, heads, channels}, w.options()).add(sources.get(0).sum().mul(new Scalar(0.0)))
                    .add(w.sum().mul(new Scalar(0.0)));
        }
        Tensor[] perHead = new Tensor[heads];
        for (int k = 0; k < heads; k++) {
            Tensor weights = w.select(1, k).contiguous();
            perHead[k] = torch.embedding_bag(sources.get(1 + k), edges.col(), edges.rowptr(), false, 0, sparse,
                    new TensorOptional(weights), true, new LongOptional()).get0();
        }
        return torch.stack(new TensorVector(perHead), 1);
    }

    @Override
    public List<Tensor> shard(Csr edges, Tensor dst, List<Tensor> sources) {
        long n = edges.numRows();
        Tensor row = edges.rowIndex();
        Tensor e = scores(edges, dst, sources, row);
        Tensor m = torch.full(new long[] {n, heads}, new Scalar(NO_EDGE), dst.options())
                .index_reduce(0, row, e.detach(), "amax", true);
        Tensor p = e.sub(m.index_select(0, row)).exp();
        Tensor s = torch.zeros(new long[] {n, heads}, dst.options()).index_add(0, row, p);
        Tensor o = weightedSum(edges, sources, p, false);
        return List.of(m, s, o);
    }

    @Override
    public List<Tensor> combine(List<Tensor> a, List<Tensor> b) {
        Tensor m = torch.maximum(a.get(0), b.get(0));
        Tensor ea = a.get(0).sub(m).exp();
        Tensor eb = b.get(0).sub(m).exp();
        Tensor s = a.get(1).mul(ea).add(b.get(1).mul(eb));
        Tensor o = a.get(2).mul(ea.unsqueeze(-1)).add(b.get(2).mul(eb.unsqueeze(-1)));
        return List.of(m, s, o);
    }

    @Override
    public Tensor finish(List<Tensor> state) {
        Tensor o = state.get(2);
        return o.div(state.get(1).unsqueeze(-1)).reshape(o.size(0), (long) heads * channels);
    }

    /**
     * With M, S the final max and sum (constants), α = exp(e − M)/S and D_v = g_v·out_v:
     * {@code Σ_v g_v·Σ_u α_uv h_u − Σ_v D_v·Σ_u α_uv}, whose gradient is the shard's exact share.
     */
    @Override
    public Tensor surrogate(Csr edges, Tensor dst, List<Tensor> sources, Tensor gradOut, List<Tensor> finalState, Tensor out) {
        Tensor row = edges.rowIndex();
        Tensor e = scores(edges, dst, sources, row);
        Tensor alpha = e.sub(finalState.get(0).index_select(0, row)).exp().div(finalState.get(1).index_select(0, row));
        Tensor g3 = gradOut.view(-1, heads, channels);
        Tensor partial = weightedSum(edges, sources, alpha, true);
        Tensor d = g3.mul(out.view(-1, heads, channels)).sum(new long[] {-1}, false, new ScalarTypeOptional());
        Tensor alphaSum = torch.zeros(new long[] {edges.numRows(), heads}, dst.options()).index_add(0, row, alpha);
        return g3.mul(partial).sum().sub(d.mul(alphaSum).sum());
    }

    /** The surrogate reads the running max and sum, not the weighted sum (a full feature matrix). */
    @Override
    public List<Tensor> stateForBackward(List<Tensor> finalState) {
        return java.util.Arrays.asList(finalState.get(0), finalState.get(1), null);
    }

    @Override
    public List<Tensor> parameters() {
        return List.of(attSrc, attDst);
    }

    @Override
    public boolean selfLoops() {
        return true;
    }
}
