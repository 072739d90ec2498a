package io.mn4j.gnn.nn;

import io.mn4j.gnn.graph.Csr;
import io.mn4j.gnn.random.KeepMask;
import io.mn4j.gnn.shard.EdgeEnds;
import io.mn4j.gnn.shard.ShardOperator;
import java.util.Arrays;
import java.util.List;
import org.bytedeco.pytorch.GradMode;
import org.bytedeco.pytorch.LongOptional;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.ScalarTypeOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptional;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * GAT's attention aggregation as a {@link ShardOperator}: multi-head, LeakyReLU scores, softmax
 * over all in-neighbours (self included) across every shard, by an online softmax: each shard
 * keeps per node and head a running max {@code m}, a sum {@code s = Σ exp(e − m)} and a weighted
 * sum {@code o = Σ exp(e − m)·h_u}; merging rescales to the larger max.
 *
 * <p>Rows (both {@code dst} and {@code src}) are the projected features {@code h = x·W}, [n, H·C].
 * Messages are summed with {@code embedding_bag}, so no [edges, H, C] tensor is made: in SAR mode
 * by one call over the rows seen as a table of [n·H, C] (row u·H + k is head k of u), with no copy
 * of the rows per head, and in the rematerialized backward the rows' gradient is sparse and in the
 * rows' own layout, so a step costs what its edges cost (see {@link #weightedSum} for the other
 * modes).
 *
 * <p>Attention dropout (the paper's, PyG's {@code GATConv(dropout=p)}): the normalised
 * coefficients {@code α_uv} are dropped in the weighted sum only, not in the softmax's sum, each
 * edge's heads by a mask keyed by its ends' ids ({@link Dropout#edgeMask}), so every mode and
 * every rank count, and SAR's rematerialized backward, drop the same coefficients.
 */
final class GraphAttention implements ShardOperator {
    /** Stands for −∞ in running maxima (finite, so that merging two empty states stays 0, not NaN). */
    private static final double NO_EDGE = -1e30;

    private final int heads;
    private final int channels;
    private final Tensor attSrc;
    private final Tensor attDst;
    private final double slope;
    /** The dropout of this forward's coefficients, or null for none. */
    private final DropoutKey dropKey;
    private final KeepMask keep;

    GraphAttention(int heads, int channels, Tensor attSrc, Tensor attDst, double slope) {
        this(heads, channels, attSrc, attDst, slope, null, null);
    }

    private GraphAttention(int heads, int channels, Tensor attSrc, Tensor attDst, double slope, DropoutKey dropKey, KeepMask keep) {
        this.heads = heads;
        this.channels = channels;
        this.attSrc = attSrc;
        this.attDst = attDst;
        this.slope = slope;
        this.dropKey = dropKey;
        this.keep = keep;
    }

    /** This attention with its coefficients dropped with probability {@code p} by masks of {@code key} (none for a null key or p 0). */
    GraphAttention dropping(DropoutKey key, double p) {
        if (key == null || p == 0) {
            return this;
        }
        if (!(p > 0 && p < 1)) {
            throw new IllegalArgumentException("attention dropout must be in [0, 1), got " + p);
        }
        return new GraphAttention(heads, channels, attSrc, attDst, slope, key, new KeepMask(p));
    }

    /** {@code w}, or w times the step's attention dropout mask. */
    private Tensor dropped(Tensor w, Csr edges, EdgeEnds ends) {
        if (dropKey == null || edges.nnz() == 0) {
            return w;
        }
        return w.mul(Dropout.edgeMask(w.scalar_type(), edges, ends, heads, dropKey, keep));
    }

    /**
     * The source logits {@code a_src·h_u} [n, H], computed once per block, and the rows as a table
     * of [n·H, C] (a view: the manager adds its gradient straight into the rows').
     */
    @Override
    public List<Tensor> sources(Tensor src) {
        return List.of(headDot(src, attSrc), src.view(-1, channels));
    }

    /** Scores e[edge, head] = LeakyReLU(a_src·h_u + a_dst·h_v). */
    private Tensor scores(Csr edges, Tensor dst, List<Tensor> sources, Tensor row) {
        Tensor ad = headDot(dst, attDst);
        Tensor e = sources.get(0).index_select(0, edges.col()).add(ad.index_select(0, row));
        return torch.leaky_relu(e, new Scalar(slope));
    }

    /**
     * a[head]·h[n, head] for every row and head: [n, H], as one product with the block-diagonal
     * [H·C, H] matrix of a. An elementwise product and sum would make an [n, H, C] temporary in
     * forward and two in backward (for the rows' gradient and for a's).
     */
    private Tensor headDot(Tensor rows, Tensor att) {
        Tensor eye = torch.eye(heads, att.options()).view(heads, 1, heads);
        return rows.matmul(att.view(heads, channels, 1).mul(eye).view(heads * channels, heads));
    }

    /**
     * Σ_(u→v) w[edge, head]·h_u[head] for every head: [n, H, C] (not necessarily contiguous).
     * {@code sparse}: the table's gradient as a sparse tensor of the edges' rows rather than a
     * dense table.
     *
     * <p>Without autograd (SAR's forward) or with a sparse gradient (its rematerialized steps):
     * one bag per head and destination, bag k·n + v summing table rows u·H + k over v's edges
     * weighted by w[edge, k], so the rows are read where they are. When autograd records the call
     * with a dense gradient (SEQUENTIAL, ONE_SHOT and PIPELINED keep the graph), one bag per head
     * over a per-head copy of the rows instead: the copies (4·C·n bytes per head) cost less than
     * what a single bag over H·E indices would keep and sort in backward.
     */
    private Tensor weightedSum(Csr edges, List<Tensor> sources, Tensor w, boolean sparse) {
        long n = edges.numRows(), e = edges.nnz();
        Tensor table = sources.get(1);
        if (e == 0) {
            // Zero, yet connected to the sources and weights, so that their gradients (zero) are defined.
            return torch.zeros(new long[] {n, heads, channels}, w.options()).add(table.sum().mul(new Scalar(0.0)))
                    .add(w.sum().mul(new Scalar(0.0)));
        }
        if (!sparse && GradMode.is_enabled() && (table.requires_grad() || w.requires_grad())) {
            // unbind: the backward of the per-head tables is one stack, not a full-size buffer per head.
            TensorVector perHeadTable = table.view(-1, heads, channels).permute(1, 0, 2).contiguous().unbind(0);
            Tensor[] perHead = new Tensor[heads];
            for (int k = 0; k < heads; k++) {
                perHead[k] = torch.embedding_bag(perHeadTable.get(k), edges.col(), edges.rowptr(), false, 0, false,
                        new TensorOptional(w.select(1, k).contiguous()), true, new LongOptional()).get0();
            }
            return torch.stack(new TensorVector(perHead), 1);
        }
        Tensor head = torch.arange(new Scalar(heads), new TensorOptions(torch.ScalarType.Long)).unsqueeze(1);
        Tensor index = edges.col().mul(new Scalar(heads)).unsqueeze(0).add(head).view(-1);
        Tensor offsets = edges.rowptr().narrow(0, 0, n).unsqueeze(0).add(head.mul(new Scalar(e))).view(-1);
        Tensor weights = w.t().contiguous().view(-1);
        return torch.embedding_bag(table, index, offsets, false, 0, sparse, new TensorOptional(weights), false,
                new LongOptional()).get0().view(heads, n, channels).permute(1, 0, 2);
    }

    @Override
    public List<Tensor> shard(Csr edges, EdgeEnds ends, Tensor dst, List<Tensor> sources) {
        long n = edges.numRows();
        Tensor row = edges.rowIndex();
        Tensor e = scores(edges, dst, sources, row);
        Tensor m = torch.full(new long[] {n, heads}, new Scalar(NO_EDGE), dst.options())
                .index_reduce(0, row, e.detach(), "amax", true);
        Tensor p = e.sub(m.index_select(0, row)).exp();
        Tensor s = torch.zeros(new long[] {n, heads}, dst.options()).index_add(0, row, p);
        // Node-major, as the state is merged and finished row by row.
        Tensor o = weightedSum(edges, sources, dropped(p, edges, ends), false).contiguous();
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
     * With M, S the final max and sum (constants), α = exp(e − M)/S, the dropout mask K and
     * D_v = g_v·out_v: {@code Σ_v g_v·Σ_u K_uv α_uv h_u − Σ_v D_v·Σ_u α_uv}, whose gradient is the
     * shard's exact share (∂out_v/∂e_uv = α_uv (K_uv h_u − out_v)).
     */
    @Override
    public Tensor surrogate(Csr edges, EdgeEnds ends, Tensor dst, List<Tensor> sources, Tensor gradOut, List<Tensor> finalState,
            Tensor out) {
        Tensor row = edges.rowIndex();
        Tensor e = scores(edges, dst, sources, row);
        Tensor alpha = e.sub(finalState.get(0).index_select(0, row)).exp().div(finalState.get(1).index_select(0, row));
        Tensor g3 = gradOut.view(-1, heads, channels);
        Tensor partial = weightedSum(edges, sources, dropped(alpha, edges, ends), true);
        Tensor d = g3.mul(out.view(-1, heads, channels)).sum(new long[] {-1}, false, new ScalarTypeOptional());
        Tensor alphaSum = torch.zeros(new long[] {edges.numRows(), heads}, dst.options()).index_add(0, row, alpha);
        return g3.mul(partial).sum().sub(d.mul(alphaSum).sum());
    }

    /** The surrogate reads the running max and sum, not the weighted sum (a full feature matrix). */
    @Override
    public List<Tensor> stateForBackward(List<Tensor> finalState) {
        return Arrays.asList(finalState.get(0), finalState.get(1), null);
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
