package io.mn4j.mpitests.gnn;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.ReduceOp;
import io.mn4j.functions.MultiNodeBatchNorm;
import io.mn4j.gnn.nn.GnnModel;
import io.mn4j.gnn.shard.AggregationMode;
import io.mn4j.gnn.shard.GraphShardManager;
import io.mn4j.mpitests.Check;
import io.mn4j.tensor.Tensors;
import java.util.Arrays;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * {@link GnnLayerSuite}'s checks of whole models with dropout 0.5 (GAT: of its attention too)
 * against the same model on the whole graph in one process (a one-rank manager on a communicator
 * of this rank alone), in float64 to 1e-9: with the node ids masks are keyed by set to another
 * numbering than the graph's, and with batch norm between the layers.
 */
final class ModelChecks {
    private static final int IN = 6, HIDDEN = 8, CLASSES = 3, LAYERS = 3, HEADS = 2;

    private ModelChecks() {
    }

    private static GnnModel model(GnnModel.Kind kind) {
        torch.manual_seed(78);
        GnnModel m = new GnnModel(kind, IN, HIDDEN, CLASSES, LAYERS, 0.5, HEADS).dropoutSeed(5);
        m.to(torch.ScalarType.Double, false);
        return m;
    }

    /**
     * Node v's id is (17·v + 5) mod n (n = 41, prime: a permutation), set with {@code nodeIds} on a
     * manager of the partitioned graph (each rank learns its partners' ids in an exchange) and on
     * the one-process one: equal outputs and gradients; and not those of the graph's numbering.
     */
    static void otherNumbering(Communicator c, Check check, RandomPartitionedGraph g, AggregationMode mode) {
        int n = (int) g.offsets[g.offsets.length - 1];
        long[] ids = new long[n];
        for (int v = 0; v < n; v++) {
            ids[v] = (17L * v + 5) % n;
        }
        long[] mine = Arrays.copyOfRange(ids, (int) g.offsets[c.rank()], (int) g.offsets[c.rank() + 1]);
        GnnModel m = model(GnnModel.Kind.GAT);
        Tensor x = RandomPartitionedGraph.values(5, torch.ScalarType.Double, n, IN);
        Tensor r = RandomPartitionedGraph.values(6, torch.ScalarType.Double, n, CLASSES);
        Tensor[] refGrads;
        Tensor outRef;
        Tensor outGraphNumbering;
        try (Communicator alone = c.split(c.rank(), 0);
                GraphShardManager whole = GraphShardManager.build(alone, new long[] {0, n}, g.wholeInEdges())) {
            outGraphNumbering = m.step(0).forward(whole, x, true).detach();
            whole.nodeIds(Tensors.longs(ids));
            outRef = m.step(0).forward(whole, x, true);
            refGrads = backward(m, outRef, r);
        }
        check.isTrue("the ids decide the masks", outRef.sub(outGraphNumbering).abs().max().item_double() > 1e-3,
                "the same output with the graph's numbering");
        try (GraphShardManager dist = GraphShardManager.build(c, g.offsets, g.localInEdges(c.rank())).mode(mode)) {
            dist.nodeIds(Tensors.longs(mine));
            check.isTrue("nodeIds() returns them", Arrays.equals(mine, dist.nodeIds()), Arrays.toString(dist.nodeIds()));
            Tensor out = m.step(0).forward(dist, g.slice(x, c.rank()), true);
            check.tensorsClose("forward", g.slice(outRef, c.rank()), out, 1e-9);
            Tensor[] grads = backward(m, out, g.slice(r, c.rank()));
            for (int i = 0; i < grads.length; i++) {
                check.tensorsClose("grad param " + i, refGrads[i], c.allreduce(grads[i], ReduceOp.SUM), 1e-9);
            }
        }
    }

    /**
     * A model with batch norm over the nodes of all ranks against one whose batch norm sees the
     * whole graph in one process, for {@code epochs} passes with the same parameters and masks
     * (PIPELINED: from the second on, the stale rows are the current ones): outputs, parameter
     * gradients summed over ranks, the running statistics of every rank, and the output in
     * evaluation (running statistics, no dropout).
     */
    static void batchNorm(Communicator c, Check check, RandomPartitionedGraph g, GraphShardManager dist, GnnModel.Kind kind, int epochs) {
        int n = (int) g.offsets[g.offsets.length - 1];
        Tensor x = RandomPartitionedGraph.values(5, torch.ScalarType.Double, n, IN);
        Tensor r = RandomPartitionedGraph.values(6, torch.ScalarType.Double, n, CLASSES);
        GnnModel m = model(kind).batchNorm(c);
        check.equal("batch norms", LAYERS - 1, m.batchNorms().size());
        try (Communicator alone = c.split(c.rank(), 0);
                GraphShardManager whole = GraphShardManager.build(alone, new long[] {0, n}, g.wholeInEdges())) {
            GnnModel ref = model(kind).batchNorm(alone);
            Tensor outRef = null;
            Tensor[] refGrads = null;
            for (int e = 0; e < epochs; e++) {
                outRef = ref.step(0).forward(whole, x, true);
                refGrads = backward(ref, outRef, r);
            }
            for (int e = 0; e < epochs; e++) {
                String epoch = epochs > 1 ? "epoch " + e + " " : "";
                dist.nextEpoch();
                Tensor out = m.step(0).forward(dist, g.slice(x, c.rank()), true);
                check.tensorsClose(epoch + "forward", g.slice(outRef, c.rank()), out, 1e-9);
                Tensor[] grads = backward(m, out, g.slice(r, c.rank()));
                for (int i = 0; i < grads.length; i++) {
                    check.tensorsClose(epoch + "grad param " + i, refGrads[i], c.allreduce(grads[i], ReduceOp.SUM), 1e-9);
                }
            }
            for (int i = 0; i < LAYERS - 1; i++) {
                MultiNodeBatchNorm a = ref.batchNorms().get(i), b = m.batchNorms().get(i);
                check.tensorsClose("running mean " + i, a.runningMean(), b.runningMean(), 1e-9);
                check.tensorsClose("running variance " + i, a.runningVar(), b.runningVar(), 1e-9);
            }
            ref.train(false);
            m.train(false);
            try (NoGradGuard off = new NoGradGuard()) {
                check.tensorsClose("evaluation (running statistics)", g.slice(ref.forward(whole, x, false), c.rank()),
                        m.forward(dist, g.slice(x, c.rank()), false), 1e-9);
            }
        }
    }

    /** Backward of Σ out·r; returns every parameter's gradient (zeros where none) and zeroes them. */
    private static Tensor[] backward(GnnModel m, Tensor out, Tensor r) {
        out.mul(r).sum().backward();
        TensorVector params = m.parameters();
        Tensor[] grads = new Tensor[(int) params.size()];
        for (int i = 0; i < grads.length; i++) {
            Tensor gr = params.get(i).grad();
            grads[i] = gr.defined() ? gr.clone() : torch.zeros_like(params.get(i));
            if (gr.defined()) {
                gr.zero_();
            }
        }
        return grads;
    }
}
