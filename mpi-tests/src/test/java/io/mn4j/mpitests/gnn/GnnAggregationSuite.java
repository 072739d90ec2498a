package io.mn4j.mpitests.gnn;

import io.mn4j.communicator.Communicator;
import io.mn4j.gnn.graph.Csr;
import io.mn4j.gnn.kernel.CsrAggregation;
import io.mn4j.gnn.shard.AggregationMode;
import io.mn4j.gnn.shard.EdgeEnds;
import io.mn4j.gnn.shard.EdgeNorm;
import io.mn4j.gnn.shard.GraphShardManager;
import io.mn4j.gnn.shard.ShardOperator;
import io.mn4j.mpitests.Check;
import io.mn4j.mpitests.Scenario;
import io.mn4j.mpitests.ScenarioSuite;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import org.bytedeco.pytorch.BoolOptional;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorArrayRefOptional;
import org.bytedeco.pytorch.global.torch;

/**
 * Distributed neighbourhood sums against the one-process dense computation: forward rows and
 * input gradients, every weighting, every mode.
 */
public class GnnAggregationSuite implements ScenarioSuite {
    @Override
    public Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = new LinkedHashMap<>();
        for (AggregationMode mode : Modes.exact()) {
            for (boolean isolated : new boolean[] {false, true}) {
                s.put("sums " + mode + (isolated ? " with isolated nodes" : ""), (c, check) -> {
                    RandomPartitionedGraph g = new RandomPartitionedGraph(47, 160, c.size(), 5, isolated);
                    try (GraphShardManager m = GraphShardManager.build(c, g.offsets, g.localInEdges(c.rank())).mode(mode)) {
                        for (EdgeNorm norm : EdgeNorm.values()) {
                            for (torch.ScalarType type : new torch.ScalarType[] {torch.ScalarType.Double, torch.ScalarType.Float}) {
                                double tol = type == torch.ScalarType.Double ? 1e-10 : 1e-5;
                                Tensor x = RandomPartitionedGraph.values(11, type, g.n, 5);
                                Tensor r = RandomPartitionedGraph.values(12, type, g.n, 5);
                                Tensor dense = g.dense(norm).to(type);
                                Tensor outRef = dense.matmul(x);
                                Tensor gradRef = dense.t().matmul(r);
                                Tensor xLocal = g.slice(x, c.rank()).clone().set_requires_grad(true);
                                Tensor out = m.aggregate(xLocal, norm);
                                out.mul(g.slice(r, c.rank())).sum().backward();
                                String k = norm + " " + type;
                                check.tensorsClose(k + " forward", g.slice(outRef, c.rank()), out, tol);
                                check.tensorsClose(k + " grad x", g.slice(gradRef, c.rank()), xLocal.grad(), tol);
                            }
                        }
                    }
                });
            }
        }
        s.put("sums PIPELINED: epoch t reads the boundary rows and gradients of epoch t-1", (c, check) -> pipelinedSums(c, check, 0, false));
        s.put("sums PIPELINED, smoothing 0.6: epoch t reads running averages of the stale rows and gradients",
                (c, check) -> pipelinedSums(c, check, 0.6, false));
        // The path attention layers take, with an operator whose every pass is checkable by hand.
        s.put("a ShardOperator (plain sum) PIPELINED: epoch t reads the boundary rows and gradients of epoch t-1",
                (c, check) -> pipelinedSums(c, check, 0, true));
        s.put("PIPELINED smoothing outside [0, 1) and staleness below 1 are refused", (c, check) -> {
            RandomPartitionedGraph g = new RandomPartitionedGraph(47, 160, c.size(), 5, false);
            try (GraphShardManager m = GraphShardManager.build(c, g.offsets, g.localInEdges(c.rank()))) {
                check.throwsWith("smoothing 1", () -> m.smoothing(1), "smoothing must be in [0, 1), got 1.0");
                check.throwsWith("smoothing NaN", () -> m.smoothing(Double.NaN), "smoothing must be in [0, 1), got NaN");
                check.throwsWith("staleness 0", () -> m.staleness(0), "staleness must be at least 1 epoch, got 0");
            }
        });
        s.put("sums PIPELINED, staleness 2: every epoch reads rows and gradients of one of the two epochs before",
                (c, check) -> boundedStaleness(c, check, false));
        s.put("sums PIPELINED, staleness 2: partners that fall behind are not waited for", (c, check) -> boundedStaleness(c, check, true));
        s.put("sums PIPELINED: clear errors for a training pass before nextEpoch() and for rows that change width",
                GnnAggregationSuite::pipelinedMisuse);
        return s;
    }

    private static final int PIPELINE_EPOCHS = 4;

    /** {@code out[v] = Σ_(u→v) src[u]} as a {@link ShardOperator}: only what ONE_SHOT and PIPELINED call. */
    private static final ShardOperator SUM = new ShardOperator() {
        @Override
        public List<Tensor> shard(Csr edges, EdgeEnds ends, Tensor dst, List<Tensor> sources) {
            // Not closed: the result's backward uses it (left to the garbage collector, in this test).
            return List.of(CsrAggregation.of(edges).apply(sources.get(0)));
        }

        @Override
        public List<Tensor> combine(List<Tensor> a, List<Tensor> b) {
            return List.of(a.get(0).add(b.get(0)));
        }

        @Override
        public Tensor finish(List<Tensor> state) {
            return state.get(0);
        }

        @Override
        public Tensor surrogate(Csr edges, EdgeEnds ends, Tensor dst, List<Tensor> sources, Tensor gradOut, List<Tensor> finalState,
                Tensor out) {
            throw new UnsupportedOperationException("SAR mode only");
        }

        @Override
        public List<Tensor> parameters() {
            return List.of();
        }
    };

    /**
     * Four epochs with new features and output weights each: with M split into the edges inside
     * partitions (M_in) and across them (M_cross), epoch t must compute
     * {@code M_in·x_t + M_cross·s_t} and the gradient {@code M_inᵀ·r_t + M_crossᵀ·q_t}, where
     * s_0 = x_0 and {@code s_t = γ·s_(t-1) + (1−γ)·x_(t-1)} (without smoothing, s_t = x_(t-1):
     * epoch 0 reads its own rows, epoch 1 reads them again), q likewise from r; and a pass
     * without autograd {@code M·x_t}.
     */
    private static void pipelinedSums(Communicator c, Check check, double gamma, boolean throughOperator) {
        RandomPartitionedGraph g = new RandomPartitionedGraph(47, 160, c.size(), 5, false);
        Tensor inside = g.samePartition();
        for (EdgeNorm norm : throughOperator ? new EdgeNorm[] {EdgeNorm.SUM} : EdgeNorm.values()) {
            for (torch.ScalarType type : new torch.ScalarType[] {torch.ScalarType.Double, torch.ScalarType.Float}) {
                double tol = type == torch.ScalarType.Double ? 1e-10 : 1e-5;
                Tensor dense = g.dense(norm);
                Tensor mIn = dense.mul(inside).to(type);
                Tensor mCross = dense.sub(dense.mul(inside)).to(type);
                try (GraphShardManager m = GraphShardManager.build(c, g.offsets, g.localInEdges(c.rank()))
                        .mode(AggregationMode.PIPELINED).smoothing(gamma)) {
                    Tensor staleX = null, staleR = null;
                    for (int t = 0; t < PIPELINE_EPOCHS; t++) {
                        Tensor x = RandomPartitionedGraph.values(20 + t, type, g.n, 5);
                        Tensor r = RandomPartitionedGraph.values(40 + t, type, g.n, 5);
                        if (t == 0) {
                            staleX = x;
                            staleR = r;
                        } else {
                            Tensor xBefore = RandomPartitionedGraph.values(20 + t - 1, type, g.n, 5);
                            Tensor rBefore = RandomPartitionedGraph.values(40 + t - 1, type, g.n, 5);
                            staleX = staleX.mul(RandomPartitionedGraph.s(gamma)).add(xBefore.mul(RandomPartitionedGraph.s(1 - gamma)));
                            staleR = staleR.mul(RandomPartitionedGraph.s(gamma)).add(rBefore.mul(RandomPartitionedGraph.s(1 - gamma)));
                        }
                        Tensor outRef = mIn.matmul(x).add(mCross.matmul(staleX));
                        Tensor gradRef = mIn.t().matmul(r).add(mCross.t().matmul(staleR));
                        m.nextEpoch();
                        Tensor xLocal = g.slice(x, c.rank()).clone().set_requires_grad(true);
                        Tensor out = throughOperator ? m.aggregate(xLocal, xLocal, SUM) : m.aggregate(xLocal, norm);
                        out.mul(g.slice(r, c.rank())).sum().backward();
                        String k = norm + " " + type + " epoch " + t + (gamma > 0 ? " smoothing " + gamma : "");
                        check.tensorsClose(k + " forward", g.slice(outRef, c.rank()), out, tol);
                        check.tensorsClose(k + " grad x", g.slice(gradRef, c.rank()), xLocal.grad(), tol);
                        try (NoGradGuard off = new NoGradGuard()) {
                            check.tensorsClose(k + " without autograd: fresh rows", g.slice(dense.to(type).matmul(x), c.rank()),
                                    throughOperator ? m.aggregate(g.slice(x, c.rank()), g.slice(x, c.rank()), SUM)
                                            : m.aggregate(g.slice(x, c.rank()), norm), tol);
                        }
                    }
                }
            }
        }
    }

    /**
     * Staleness 2, five epochs of {@code M_in·x_t + M_cross·x_k} (sums, float64): each epoch's
     * output and gradient must be one of those with k = t-1 or t-2 (0 at least; one generation for
     * all partners). With {@code partnersLate}, every rank but 0 sleeps before its forward of
     * epoch 2, so that rank 0 reaches epoch 3 before their rows of epoch 2 exist: it must read
     * epoch 1's (forward and backward) rather than wait, where staleness 1 would wait for epoch 2's.
     */
    private static void boundedStaleness(Communicator c, Check check, boolean partnersLate) {
        RandomPartitionedGraph g = new RandomPartitionedGraph(47, 160, c.size(), 5, false);
        Tensor dense = g.dense(EdgeNorm.SUM);
        Tensor mIn = dense.mul(g.samePartition());
        Tensor mCross = dense.sub(mIn);
        IntFunction<Tensor> xs = t -> RandomPartitionedGraph.values(20 + t, torch.ScalarType.Double, g.n, 5);
        IntFunction<Tensor> rs = t -> RandomPartitionedGraph.values(40 + t, torch.ScalarType.Double, g.n, 5);
        try (GraphShardManager m = GraphShardManager.build(c, g.offsets, g.localInEdges(c.rank())).mode(AggregationMode.PIPELINED).staleness(2)) {
            for (int t = 0; t < 5; t++) {
                if (partnersLate && t == 2 && c.rank() > 0) {
                    try {
                        Thread.sleep(1500);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                m.nextEpoch();
                Tensor xLocal = g.slice(xs.apply(t), c.rank()).clone().set_requires_grad(true);
                Tensor out = m.aggregate(xLocal, EdgeNorm.SUM);
                out.mul(g.slice(rs.apply(t), c.rank())).sum().backward();
                int forward = -1, backward = -1;
                for (int k = Math.max(t - 2, 0); k <= Math.max(t - 1, 0); k++) {
                    Tensor outRef = g.slice(mIn.matmul(xs.apply(t)).add(mCross.matmul(xs.apply(k))), c.rank());
                    Tensor gradRef = g.slice(mIn.t().matmul(rs.apply(t)).add(mCross.t().matmul(rs.apply(k))), c.rank());
                    forward = out.sub(outRef).abs().max().item_double() < 1e-10 ? k : forward;
                    backward = xLocal.grad().sub(gradRef).abs().max().item_double() < 1e-10 ? k : backward;
                }
                check.isTrue("epoch " + t + " forward reads epoch t-1's or t-2's rows", forward >= 0, "matches neither");
                check.isTrue("epoch " + t + " backward reads epoch t-1's or t-2's gradients", backward >= 0, "matches neither");
                if (partnersLate && t == 3 && c.rank() == 0 && c.size() > 1) {
                    check.equal("epoch 3 on rank 0, partners asleep: the rows read are of epoch", 1, forward);
                    check.equal("epoch 3 on rank 0, partners asleep: the gradients read are of epoch", 1, backward);
                }
            }
        }
    }

    private static void pipelinedMisuse(Communicator c, Check check) {
        RandomPartitionedGraph g = new RandomPartitionedGraph(47, 160, c.size(), 5, false);
        try (GraphShardManager m = GraphShardManager.build(c, g.offsets, g.localInEdges(c.rank())).mode(AggregationMode.PIPELINED)) {
            Tensor x = g.slice(RandomPartitionedGraph.values(3, torch.ScalarType.Double, g.n, 5), c.rank());
            check.throwsWith("a training pass before nextEpoch()", () -> m.aggregate(x.clone().set_requires_grad(true), EdgeNorm.SUM),
                    "rank " + c.rank(), "before nextEpoch()", "call graph.nextEpoch()");
            m.nextEpoch();
            m.aggregate(x.clone().set_requires_grad(true), EdgeNorm.SUM).sum().backward();
            m.nextEpoch();
            Tensor narrower = x.narrow(1, 0, 3).clone().set_requires_grad(true);
            if (c.size() > 1) {
                check.throwsWith("rows narrower than the epoch before", () -> m.aggregate(narrower, EdgeNorm.SUM),
                        "rank " + c.rank() + ": pipelined aggregation 0's rows are [", ", 3] Double to rank ",
                        "sent it in an earlier epoch as [", ", 5] Double", "one width and dtype", "mode(...) restarts the pipeline");
                Supplier<Tensor> pass = () -> m.aggregate(x.clone().set_requires_grad(true), EdgeNorm.SUM);
                m.mode(AggregationMode.PIPELINED).nextEpoch();
                pass.get();
                m.nextEpoch();
                check.throwsWith("a forward whose last forward had no backward", pass::get,
                        "rank " + c.rank() + ": pipelined aggregation 0 runs its forward again before the backward of its last one");
                m.mode(AggregationMode.PIPELINED).nextEpoch();
                pass.get().sum().backward();
                check.throwsWith("a second epoch without nextEpoch()", pass::get,
                        "a pipelined training forward after a backward in the same epoch", "call graph.nextEpoch()");
                m.mode(AggregationMode.PIPELINED).nextEpoch();
                Tensor y = pass.get().sum();
                y.backward(new Tensor(), new BoolOptional(true), false, new TensorArrayRefOptional());
                check.throwsWith("a second backward through one forward (retain_graph)", y::backward,
                        "pipelined aggregation 0", "its backward already ran", "each forward's gradients are exchanged once");
                m.mode(AggregationMode.PIPELINED).nextEpoch();
                pass.get().add(pass.get()).sum().backward();
                m.nextEpoch();
                pass.get().sum().backward();
                check.throwsWith("an epoch with fewer aggregations than the first", m::nextEpoch,
                        "rank " + c.rank() + ": epoch 2 of the pipeline made 1 pipelined training aggregations where the first had 2");
                m.mode(AggregationMode.PIPELINED).nextEpoch();
                pass.get().sum().backward();
                m.nextEpoch();
                check.throwsWith("an epoch with more aggregations than the first", () -> pass.get().add(pass.get()),
                        "rank " + c.rank() + ": pipelined training aggregation 1 in epoch 2 of the pipeline, whose first epoch had 1");
            } else {
                // One rank reads no remote rows: nothing is stale, any width goes.
                m.aggregate(narrower, EdgeNorm.SUM).sum().backward();
                check.equal("one rank: the narrower rows aggregate", 3L, narrower.grad().size(1));
            }
        }
        GraphShardManager closed = GraphShardManager.build(c, g.offsets, g.localInEdges(c.rank())).mode(AggregationMode.PIPELINED);
        closed.close();
        check.throwsWith("nextEpoch() after close()", closed::nextEpoch, "rank " + c.rank() + ": the pipeline was ended");
    }
}
