package io.mn4j.gnn.shard;

import io.mn4j.gnn.graph.Csr;
import io.mn4j.gnn.kernel.CsrAggregation;
import io.mn4j.tensor.Scopes;
import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * The matrices the aggregations multiply by, each built once, when first used: every shard
 * weighted by each {@link EdgeNorm} (in each dtype aggregated), GCN's self-loop weights, the local
 * shard with one self-loop per node, and the halo graph of ONE_SHOT and PIPELINED (the remote
 * shards side by side).
 */
final class EdgeWeights implements AutoCloseable {
    private final ShardLayout layout;
    /** Aggregations by the weighted shard matrices, per weighting and input dtype (weights in that dtype). */
    private final Map<EdgeNorm, Map<ScalarType, CsrAggregation[]>> weighted = new EnumMap<>(EdgeNorm.class);
    private final Map<EdgeNorm, CsrAggregation> haloGraphs = new EnumMap<>(EdgeNorm.class);
    /** GCN's self-loop weights per dtype. */
    private final Map<Integer, Tensor> selfLoops = new ConcurrentHashMap<>();
    private Csr localWithSelfLoops;

    EdgeWeights(ShardLayout layout) {
        this.layout = layout;
    }

    /**
     * Per-shard aggregations with the weights of {@code norm} for inputs of {@code like}'s dtype:
     * computed once in float64, kept in that dtype only (the kernel multiplies in it; a float64
     * copy beside float32 weights would stay in memory through every step for nothing).
     */
    synchronized CsrAggregation[] shards(EdgeNorm norm, Tensor like) {
        // Unweighted sums are the same for every dtype.
        ScalarType type = norm == EdgeNorm.SUM ? ScalarType.Double : Tensors.type(like);
        return weighted.computeIfAbsent(norm, k -> new EnumMap<>(ScalarType.class)).computeIfAbsent(type, t -> {
            CsrAggregation[] out = new CsrAggregation[layout.parts()];
            for (int p = 0; p < layout.parts(); p++) {
                // The float64 weights go with this scope; the aggregation takes handles of its own.
                try (PointerScope s = new PointerScope(); Csr w = weightedShard(p, norm);
                        Csr typed = w.withWeight(w.weight() == null ? null : w.weight().to(t).contiguous())) {
                    out[p] = CsrAggregation.of(typed);
                }
            }
            return out;
        });
    }

    /** The weighted sum over the local shard, GCN's self-loops included: all of it on one rank. */
    Tensor localSum(Tensor x, EdgeNorm norm) {
        Tensor local = shards(norm, x)[layout.rank()].apply(x);
        if (norm == EdgeNorm.GCN) {
            // In place: the sum is ours alone and autograd saves neither it nor its result, so a
            // second activation-sized tensor would only add to the peak (same values either way).
            local.addcmul_(x, selfLoopWeight(x));
        }
        return local;
    }

    /**
     * The self-loop weights {@code 1/(deg+1)} ({@code deg}: in-edges other than stored self-loops)
     * as a column in x's dtype, once per dtype: one fused multiply-add per call instead of five small ops.
     */
    Tensor selfLoopWeight(Tensor like) {
        return selfLoops.computeIfAbsent((int) like.scalar_type().value, t -> {
            try (PointerScope s = new PointerScope()) {
                return Scopes.own(layout.degreeWithoutLoops().add(new Scalar(1.0)).reciprocal().unsqueeze(1)
                        .to(like.scalar_type()).contiguous());
            }
        });
    }

    /** Shard {@code p} with the weights of {@code norm}: a new matrix (handles of its own) for the caller to close. */
    private Csr weightedShard(int p, EdgeNorm norm) {
        Csr e = layout.shard(p).edges;
        switch (norm) {
            case SUM:
                return e.withWeight(null);
            case MEAN: {
                Tensor dst = e.rowIndex();
                return e.withWeight(layout.inDegree().clamp_min(new Scalar(1.0)).reciprocal().index_select(0, dst).contiguous());
            }
            default: {
                // GCN: stored self-loops give way to the one selfLoopWeight adds (remote shards store none).
                Csr g = p == layout.rank() ? layout.localWithoutLoops() : e;
                // Two [nnz] tensors at most, products and roots in place, and no row index per entry:
                // this runs in the first forward pass, beside its activations (the same values).
                Tensor w = layout.degreeWithoutLoops().add(new Scalar(1.0)).repeat_interleave(g.rowCounts());
                Tensor du = layout.shard(p).sourceDegree.add(new Scalar(1.0)).index_select(0, g.col());
                w.mul_(du);
                du.close();
                return g.withWeight(w.rsqrt_());
            }
        }
    }

    /** The local shard {@code op} runs on: with exactly one self-loop per node if it asks for them. */
    Csr localShard(ShardOperator op) {
        return op.selfLoops() ? localWithSelfLoops() : layout.shard(layout.rank()).edges;
    }

    /** The local shard with exactly one edge v→v in every row (for operators with self-loops). */
    private synchronized Csr localWithSelfLoops() {
        if (localWithSelfLoops == null) {
            long numLocal = layout.numLocal();
            Csr e = layout.localWithoutLoops();
            long[] rp = e.rowptrArray();
            long[] col = Tensors.toLongArray(e.col());
            long[] ptr = new long[rp.length];
            long[] out = new long[col.length + (int) numLocal];
            int c = 0;
            for (int v = 0; v < numLocal; v++) {
                for (long k = rp[v]; k < rp[v + 1]; k++) {
                    out[c++] = col[(int) k];
                }
                out[c++] = v;
                ptr[v + 1] = c;
            }
            localWithSelfLoops = Csr.of(numLocal, numLocal, ptr, out, null);
        }
        return localWithSelfLoops;
    }

    /** The remote shards side by side: columns follow {@link HaloExchange#freshRows}. */
    synchronized CsrAggregation haloGraph(EdgeNorm norm) {
        return haloGraphs.computeIfAbsent(norm, k -> {
            List<Tensor> rows = new ArrayList<>(), cols = new ArrayList<>(), vals = new ArrayList<>();
            List<Csr> weightedShards = new ArrayList<>();
            long width = 0;
            for (int p = 0; p < layout.parts(); p++) {
                if (p == layout.rank()) {
                    continue;
                }
                Csr w = weightedShard(p, k);
                weightedShards.add(w);
                rows.add(w.rowIndex());
                cols.add(w.col().add(new Scalar(width)));
                if (w.weight() != null) {
                    vals.add(w.weight());
                }
                width += layout.shard(p).numNeeded();
            }
            long[] row = Tensors.toLongArray(ShardLayout.cat(rows));
            long[] ptr = new long[(int) layout.numLocal() + 1];
            Tensor order = Tensors.longs(stableOrderByRow(row, ptr));
            Tensor col = ShardLayout.cat(cols).index_select(0, order).contiguous();
            Tensor val = vals.isEmpty() ? null : ShardLayout.cat(vals).index_select(0, order).contiguous();
            weightedShards.forEach(Csr::close);
            try (Csr halo = Csr.of(layout.numLocal(), width, Tensors.longs(ptr), col, val)) {
                return CsrAggregation.of(halo);
            }
        });
    }

    /**
     * A stable counting sort of edges by destination row (rows stay contiguous, as CSR needs):
     * fills {@code ptr} with the row pointers and returns the edges' order.
     */
    private static long[] stableOrderByRow(long[] row, long[] ptr) {
        int numRows = ptr.length - 1;
        for (long r : row) {
            ptr[(int) r + 1]++;
        }
        for (int v = 0; v < numRows; v++) {
            ptr[v + 1] += ptr[v];
        }
        long[] next = Arrays.copyOf(ptr, numRows);
        long[] perm = new long[row.length];
        for (int e = 0; e < row.length; e++) {
            perm[(int) next[(int) row[e]]++] = e;
        }
        return perm;
    }

    /** Releases every matrix built. */
    @Override
    public void close() {
        weighted.values().forEach(byType -> byType.values().forEach(aggs -> Arrays.stream(aggs).forEach(CsrAggregation::close)));
        haloGraphs.values().forEach(CsrAggregation::close);
        selfLoops.values().forEach(Tensor::close);
        if (localWithSelfLoops != null) {
            localWithSelfLoops.close();
        }
    }
}
