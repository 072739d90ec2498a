package io.mn4j.mpitests.gnn;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.ReduceOp;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.nn.AttentionInPlace;
import io.mn4j.gnn.nn.DropoutKey;
import io.mn4j.gnn.nn.GATConv;
import io.mn4j.gnn.nn.GCNConv;
import io.mn4j.gnn.nn.GnnModel;
import io.mn4j.gnn.nn.SAGEConv;
import io.mn4j.gnn.random.KeepMask;
import io.mn4j.gnn.shard.AggregationMode;
import io.mn4j.gnn.shard.EdgeNorm;
import io.mn4j.gnn.shard.GraphShardManager;
import io.mn4j.gnn.train.FullGraphTrainer;
import io.mn4j.gnn.train.LocalNodes;
import io.mn4j.iterators.EpochStats;
import io.mn4j.mpitests.Check;
import io.mn4j.mpitests.Scenario;
import io.mn4j.mpitests.ScenarioSuite;
import io.mn4j.tensor.Tensors;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Supplier;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.BoolOptional;
import org.bytedeco.pytorch.LongOptional;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.SGD;
import org.bytedeco.pytorch.SGDOptions;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.ScalarTypeOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorArrayRefOptional;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * GCN, SAGE and GAT layers on a partitioned random graph against the same layers' math on the
 * whole graph in one process (dense matrices, plain autograd): outputs, input gradients and
 * parameter gradients (summed over ranks), in every mode; GAT also with attention dropout (the
 * dense formula with the masks {@link DropoutKey} and {@link KeepMask} define). Whole models with
 * dropout, batch norm and other node ids in {@link ModelChecks}.
 */
public class GnnLayerSuite implements ScenarioSuite {
    private static final int N = 41, IN = 6, HEADS = 2, CH = 3;

    @Override
    public Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = new LinkedHashMap<>();
        for (AggregationMode mode : Modes.exact()) {
            s.put("GCNConv " + mode, (c, check) -> layer(c, check, mode, () -> new GCNConv(IN, 4),
                    (m, x) -> ((GCNConv) m).forward(graph(c, mode), x), GnnLayerSuite::gcnRef));
            s.put("SAGEConv " + mode, (c, check) -> layer(c, check, mode, () -> new SAGEConv(IN, 4),
                    (m, x) -> ((SAGEConv) m).forward(graph(c, mode), x), GnnLayerSuite::sageRef));
            s.put("GATConv " + mode, (c, check) -> layer(c, check, mode, () -> new GATConv(IN, CH, HEADS),
                    (m, x) -> ((GATConv) m).forward(graph(c, mode), x), GnnLayerSuite::gatRef));
            s.put("GATConv " + mode + ", attention dropout 0.5", (c, check) -> layer(c, check, mode, () -> new GATConv(IN, CH, HEADS),
                    (m, x) -> ((GATConv) m).forward(graph(c, mode), x, ATTENTION_KEY, 0.5), GnnLayerSuite::gatDroppedRef));
        }
        for (AggregationMode mode : Modes.exact()) {
            // Under grad mode, but with nothing (or only some tensors) to differentiate.
            s.put("GATConv " + mode + ", frozen, input without grad", (c, check) -> frozenGat(c, check, mode, Trainable.NONE));
            s.put("GATConv " + mode + ", only the attention vectors trainable, input without grad",
                    (c, check) -> frozenGat(c, check, mode, Trainable.ATTENTION));
            s.put("GATConv " + mode + ", attention vectors frozen, weight, bias and input trainable",
                    (c, check) -> frozenGat(c, check, mode, Trainable.ALL_BUT_ATTENTION));
            // loss1.backward(retain_graph=true); loss2.backward(): the hooks run twice, then go with the graph.
            s.put("GCNConv " + mode + ", two backwards through one forward (retain_graph)", (c, check) -> twoBackwards(c, check, mode,
                    () -> new GCNConv(IN, 4), (m, x) -> ((GCNConv) m).forward(graph(c, mode), x), GnnLayerSuite::gcnRef));
            s.put("GATConv " + mode + ", two backwards through one forward (retain_graph)", (c, check) -> twoBackwards(c, check, mode,
                    () -> new GATConv(IN, CH, HEADS), (m, x) -> ((GATConv) m).forward(graph(c, mode), x), GnnLayerSuite::gatRef));
            // A change in place to an attention output: right gradients where autograd holds the
            // graph, a clear error where SAR's backward would recompute from the changed values.
            s.put("graph attention " + mode + ", its output changed in place", (c, check) -> AttentionInPlace.check(c, check,
                    graph(c, mode), g.offsets, HEADS, CH));
        }
        s.put("GATConv SAR: forwards under grad mode without backward keep nothing; one kept meanwhile still trains",
                GnnLayerSuite::forwardsWithoutBackward);
        s.put("FullGraphTrainer: nodes without a label count in no loss and no accuracy", GnnLayerSuite::unlabelledNodes);
        // SAR taking shards in row ranges of at most 7 edges (rows with more edges get a range each).
        s.put("GATConv SAR, 7 edges per step", (c, check) -> inPieces(c, 7, () -> layer(c, check, AggregationMode.SAR,
                () -> new GATConv(IN, CH, HEADS), (m, x) -> ((GATConv) m).forward(graph(c, AggregationMode.SAR), x),
                GnnLayerSuite::gatRef)));
        s.put("GATConv SAR, 7 edges per step, attention dropout 0.5", (c, check) -> inPieces(c, 7, () -> layer(c, check,
                AggregationMode.SAR, () -> new GATConv(IN, CH, HEADS),
                (m, x) -> ((GATConv) m).forward(graph(c, AggregationMode.SAR), x, ATTENTION_KEY, 0.5), GnnLayerSuite::gatDroppedRef)));
        s.put("3-layer GAT model SAR, 7 edges per step", (c, check) -> inPieces(c, 7,
                () -> model(c, check, GnnModel.Kind.GAT, AggregationMode.SAR, 1)));
        for (AggregationMode mode : Modes.exact()) {
            s.put("3-layer GAT model " + mode + ", dropout keyed by node ids of another numbering",
                    (c, check) -> ModelChecks.otherNumbering(c, check, g(c), mode));
        }
        for (GnnModel.Kind kind : GnnModel.Kind.values()) {
            for (AggregationMode mode : Modes.exact()) {
                s.put("3-layer " + kind + " model " + mode, (c, check) -> model(c, check, kind, mode, 1));
                s.put("3-layer " + kind + " model " + mode + " with batch norm: forward, gradients, running statistics, evaluation",
                        (c, check) -> ModelChecks.batchNorm(c, check, g(c), graph(c, mode), kind, 1));
            }
            // Parameters and inputs unchanged, so last epoch's rows and gradients are this epoch's.
            s.put("3-layer " + kind + " model PIPELINED, three epochs with the same parameters",
                    (c, check) -> model(c, check, kind, AggregationMode.PIPELINED, 3));
            s.put("3-layer " + kind + " model PIPELINED with batch norm, three epochs with the same parameters",
                    (c, check) -> ModelChecks.batchNorm(c, check, g(c), graph(c, AggregationMode.PIPELINED), kind, 3));
        }
        return s;
    }

    /** The key of the attention dropout scenarios' masks (seed 11, step 4, site 1). */
    private static final DropoutKey ATTENTION_KEY = DropoutKey.of(11, 4, 1);

    /**
     * A 3-layer model with dropout 0.5 (GAT: of its attention too) on the partitioned graph
     * against the same model on the whole graph held by one process (a one-rank manager on a
     * communicator of this rank alone), for {@code epochs} forward and backward passes with the
     * same parameters and the same step's masks.
     */
    private static void model(Communicator c, Check check, GnnModel.Kind kind, AggregationMode mode, int epochs) {
        GraphShardManager dist = graph(c, mode);
        Tensor x = RandomPartitionedGraph.values(5, torch.ScalarType.Double, N, IN);
        Tensor r = RandomPartitionedGraph.values(6, torch.ScalarType.Double, N, 3);
        torch.manual_seed(78);
        GnnModel m = new GnnModel(kind, IN, 8, 3, 3, 0.5, 2).dropoutSeed(5);
        m.to(torch.ScalarType.Double, false);
        TensorVector params = m.parameters();
        Tensor[] refGrads = new Tensor[(int) params.size()];
        Tensor outRef;
        try (Communicator alone = c.split(c.rank(), 0);
                GraphShardManager whole = GraphShardManager.build(alone, new long[] {0, N}, g.wholeInEdges())) {
            Tensor xr = x.clone().set_requires_grad(true);
            outRef = m.step(0).forward(whole, xr, true);
            outRef.mul(r).sum().backward();
            for (int i = 0; i < refGrads.length; i++) {
                refGrads[i] = params.get(i).grad().clone();
                params.get(i).grad().zero_();
            }
        }
        for (int e = 0; e < epochs; e++) {
            String epoch = epochs > 1 ? "epoch " + e + " " : "";
            dist.nextEpoch();
            Tensor xl = g.slice(x, c.rank()).clone().set_requires_grad(true);
            Tensor out = m.step(0).forward(dist, xl, true);
            out.mul(g.slice(r, c.rank())).sum().backward();
            check.tensorsClose(epoch + "forward", g.slice(outRef, c.rank()), out, 1e-9);
            for (int i = 0; i < refGrads.length; i++) {
                check.tensorsClose(epoch + "grad param " + i, refGrads[i], c.allreduce(params.get(i).grad(), ReduceOp.SUM), 1e-9);
                params.get(i).grad().zero_();
            }
        }
    }

    private static void inPieces(Communicator c, long edgesPerStep, Runnable body) {
        graph(c, AggregationMode.SAR).edgesPerStep(edgesPerStep);
        try {
            body.run();
        } finally {
            manager.edgesPerStep(-1);
        }
    }

    private static RandomPartitionedGraph g;
    private static GraphShardManager manager;
    private static AggregationMode managerMode;

    private static RandomPartitionedGraph g(Communicator c) {
        graph(c, AggregationMode.SAR);
        return g;
    }

    private static GraphShardManager graph(Communicator c, AggregationMode mode) {
        if (manager == null) {
            g = new RandomPartitionedGraph(N, 150, c.size(), 9, true);
            manager = GraphShardManager.build(c, g.offsets, g.localInEdges(c.rank()));
        }
        return manager.mode(mode);
    }

    interface Reference {
        Tensor apply(RandomPartitionedGraph g, Tensor x, TensorVector params);
    }

    /** The layer {@code make} builds after seeding LibTorch's generator with 77, in float64. */
    private static Module seededDoubleLayer(Supplier<Module> make) {
        torch.manual_seed(77);
        Module layer = make.get();
        layer.to(torch.ScalarType.Double, false);
        return layer;
    }

    /** The parameters' values as new leaves that require grad (the one-process reference's). */
    private static Tensor[] leafCopies(TensorVector params) {
        Tensor[] copies = new Tensor[(int) params.size()];
        for (int i = 0; i < copies.length; i++) {
            copies[i] = params.get(i).detach().clone().set_requires_grad(true);
        }
        return copies;
    }

    /** Each parameter's gradient summed over ranks (missing ones as zeros) equals the reference's. */
    private static void checkParamGradients(Communicator c, Check check, TensorVector params, Tensor[] refParams) {
        for (int i = 0; i < refParams.length; i++) {
            Tensor grad = params.get(i).grad();
            Tensor total = c.allreduce(grad.defined() ? grad : torch.zeros_like(params.get(i)), ReduceOp.SUM);
            check.tensorsClose("grad param " + i, refParams[i].grad(), total, 1e-9);
        }
    }

    private static void layer(Communicator c, Check check, AggregationMode mode, Supplier<Module> make,
            BiFunction<Module, Tensor, Tensor> forward, Reference ref) {
        graph(c, mode);
        Module layer = seededDoubleLayer(make);
        TensorVector params = layer.parameters();
        Tensor x = RandomPartitionedGraph.values(3, torch.ScalarType.Double, N, IN);
        Tensor r = RandomPartitionedGraph.values(4, torch.ScalarType.Double, N, 6);
        // one process, whole graph
        Tensor xRef = x.clone().set_requires_grad(true);
        Tensor[] refParams = leafCopies(params);
        Tensor outRef = ref.apply(g, xRef, new TensorVector(refParams));
        outRef.mul(r.narrow(1, 0, outRef.size(1))).sum().backward();
        // distributed
        Tensor xLocal = g.slice(x, c.rank()).clone().set_requires_grad(true);
        Tensor out = forward.apply(layer, xLocal);
        out.mul(g.slice(r, c.rank()).narrow(1, 0, out.size(1))).sum().backward();
        check.tensorsClose("forward", g.slice(outRef, c.rank()), out, 1e-9);
        // Inference (no autograd) takes other paths in every mode: the same values.
        try (NoGradGuard off = new NoGradGuard()) {
            check.tensorsClose("forward without autograd", g.slice(outRef, c.rank()), forward.apply(layer, xLocal), 1e-9);
        }
        check.tensorsClose("grad x", g.slice(xRef.grad(), c.rank()), xLocal.grad(), 1e-9);
        checkParamGradients(c, check, params, refParams);
    }

    private enum Trainable { NONE, ATTENTION, ALL_BUT_ATTENTION }

    /**
     * GATConv under grad mode with some of its tensors frozen: all of them (input and
     * parameters), all but the attention vectors, or just the attention vectors: the reference's
     * values and the gradients of what is trainable.
     */
    private static void frozenGat(Communicator c, Check check, AggregationMode mode, Trainable which) {
        graph(c, mode);
        torch.manual_seed(77);
        GATConv layer = new GATConv(IN, CH, HEADS);
        layer.to(torch.ScalarType.Double, false);
        TensorVector params = layer.parameters(); // weight, att_src, att_dst, bias
        Tensor[] refParams = new Tensor[(int) params.size()];
        boolean[] trainable = new boolean[refParams.length];
        for (int i = 0; i < refParams.length; i++) {
            boolean attention = i == 1 || i == 2;
            trainable[i] = which == Trainable.ATTENTION ? attention : which == Trainable.ALL_BUT_ATTENTION && !attention;
            params.get(i).requires_grad_(trainable[i]);
            refParams[i] = params.get(i).detach().clone().requires_grad_(trainable[i]);
        }
        boolean inputTrainable = which == Trainable.ALL_BUT_ATTENTION;
        Tensor x = RandomPartitionedGraph.values(3, torch.ScalarType.Double, N, IN);
        Tensor r = RandomPartitionedGraph.values(4, torch.ScalarType.Double, N, HEADS * CH);
        Tensor xRef = x.clone().requires_grad_(inputTrainable);
        Tensor xLocal = g.slice(x, c.rank()).clone().requires_grad_(inputTrainable);
        Tensor outRef = gatRef(g, xRef, new TensorVector(refParams));
        Tensor out = layer.forward(graph(c, mode), xLocal);
        check.tensorsClose("forward", g.slice(outRef, c.rank()), out, 1e-9);
        if (which == Trainable.NONE) {
            return;
        }
        // (Frozen, ONE_SHOT's output may still require grad: the differentiable alltoall's.)
        check.isTrue("output requires grad", out.requires_grad(), "the trainable tensors' gradients cannot flow");
        outRef.mul(r).sum().backward();
        out.mul(g.slice(r, c.rank())).sum().backward();
        if (inputTrainable) {
            check.tensorsClose("grad x", g.slice(xRef.grad(), c.rank()), xLocal.grad(), 1e-9);
        }
        for (int i = 0; i < refParams.length; i++) {
            Tensor grad = params.get(i).grad();
            if (!trainable[i]) {
                check.isTrue("frozen param " + i + " has no gradient", !grad.defined(), "it has one");
                continue;
            }
            Tensor total = c.allreduce(grad.defined() ? grad : torch.zeros_like(params.get(i)), ReduceOp.SUM);
            check.tensorsClose("grad param " + i, refParams[i].grad(), total, 1e-9);
        }
    }

    /**
     * Two backwards through one forward, the first keeping the graph (retain_graph): the
     * gradients add up to the reference's for the sum of both losses, and once the output is
     * gone the manager keeps no hooks of it.
     */
    private static void twoBackwards(Communicator c, Check check, AggregationMode mode, Supplier<Module> make,
            BiFunction<Module, Tensor, Tensor> forward, Reference ref) {
        GraphShardManager m = graph(c, mode);
        Module layer = seededDoubleLayer(make);
        TensorVector params = layer.parameters();
        Tensor x = RandomPartitionedGraph.values(3, torch.ScalarType.Double, N, IN);
        Tensor r1 = RandomPartitionedGraph.values(4, torch.ScalarType.Double, N, 6);
        Tensor r2 = RandomPartitionedGraph.values(5, torch.ScalarType.Double, N, 6);
        Tensor xRef = x.clone().set_requires_grad(true);
        Tensor[] refParams = leafCopies(params);
        Tensor outRef = ref.apply(g, xRef, new TensorVector(refParams));
        long w = outRef.size(1);
        outRef.mul(r1.narrow(1, 0, w).add(r2.narrow(1, 0, w))).sum().backward();
        int before = m.liveBridges();
        Tensor xLocal = g.slice(x, c.rank()).clone().set_requires_grad(true);
        try (PointerScope scope = new PointerScope()) {
            Tensor out = forward.apply(layer, xLocal);
            out.mul(g.slice(r1, c.rank()).narrow(1, 0, w)).sum().backward(new Tensor(), new BoolOptional(true),
                    false, new TensorArrayRefOptional());
            System.gc(); // hooks collected while the graph is kept would crash the second backward
            out.mul(g.slice(r2, c.rank()).narrow(1, 0, w)).sum().backward();
        }
        check.equal("hooks kept once the output is gone", before, m.liveBridges());
        check.tensorsClose("grad x", g.slice(xRef.grad(), c.rank()), xLocal.grad(), 1e-9);
        checkParamGradients(c, check, params, refParams);
    }

    /**
     * A SAR GAT forward kept for later, then many forwards under grad mode whose outputs are
     * dropped without backward (a validation pass without NoGradGuard): the manager must keep the
     * hooks (and the activations they read) of the kept one only, through garbage collections,
     * and its backward must still give the reference's gradients.
     */
    private static void forwardsWithoutBackward(Communicator c, Check check) {
        GraphShardManager m = graph(c, AggregationMode.SAR);
        torch.manual_seed(77);
        GATConv layer = new GATConv(IN, CH, HEADS);
        layer.to(torch.ScalarType.Double, false);
        TensorVector params = layer.parameters();
        Tensor[] refParams = leafCopies(params);
        Tensor x = RandomPartitionedGraph.values(3, torch.ScalarType.Double, N, IN);
        Tensor r = RandomPartitionedGraph.values(4, torch.ScalarType.Double, N, HEADS * CH);
        Tensor xRef = x.clone().set_requires_grad(true);
        gatRef(g, xRef, new TensorVector(refParams)).mul(r).sum().backward();
        int before = m.liveBridges();
        Tensor xl = g.slice(x, c.rank()).clone().set_requires_grad(true);
        Tensor kept = layer.forward(m, xl);
        for (int i = 1; i <= 300; i++) {
            try (PointerScope s = new PointerScope()) {
                layer.forward(m, xl);
            }
            if (i % 100 == 0) {
                System.gc(); // a hook collected while its graph lives would crash the backward below
            }
        }
        check.equal("hooks kept after 300 forwards without backward", before + 1, m.liveBridges());
        kept.mul(g.slice(r, c.rank())).sum().backward();
        check.equal("hooks kept after the kept forward's backward", before, m.liveBridges());
        check.tensorsClose("grad x", g.slice(xRef.grad(), c.rank()), xl.grad(), 1e-9);
        for (int i = 0; i < refParams.length; i++) {
            check.tensorsClose("grad param " + i, refParams[i].grad(), c.allreduce(params.get(i).grad(), ReduceOp.SUM), 1e-9);
        }
    }

    /**
     * A third of the nodes without a label ({@link Graph#UNLABELLED}), half of those in the train
     * mask: the first epoch's loss is the mean over the labelled training nodes, and the
     * accuracies count labelled nodes only, as computed on the whole graph in one process (the
     * learning rate is 0, so the evaluation after the step sees the same model).
     */
    private static void unlabelledNodes(Communicator c, Check check) {
        Tensor ids = torch.arange(new Scalar(N), new TensorOptions(torch.ScalarType.Long));
        Tensor labels = ids.mul(new Scalar(7)).remainder(new Scalar(3));
        Tensor labelled = ids.remainder(new Scalar(3)).ne(new Scalar(1));
        labels.masked_fill_(labelled.logical_not(), new Scalar(Graph.UNLABELLED));
        Tensor[] splits = {ids.remainder(new Scalar(2)).eq(new Scalar(0)), ids.remainder(new Scalar(2)).eq(new Scalar(1)),
                torch.ones_like(labelled)};
        Tensor x = RandomPartitionedGraph.values(8, torch.ScalarType.Double, N, IN);
        torch.manual_seed(79);
        GnnModel model = new GnnModel(GnnModel.Kind.GCN, IN, 8, 3, 2, 0.0, 1);
        model.to(torch.ScalarType.Double, false);
        double expectedLoss;
        double[] expectedAccuracy = new double[3];
        try (Communicator alone = c.split(c.rank(), 0);
                GraphShardManager whole = GraphShardManager.build(alone, new long[] {0, N}, g.wholeInEdges());
                NoGradGuard off = new NoGradGuard()) {
            Tensor out = model.forward(whole, x, false);
            Tensor train = splits[0].logical_and(labelled).nonzero().squeeze(1);
            expectedLoss = torch.nll_loss(torch.log_softmax(out.index_select(0, train), 1), labels.index_select(0, train)).item_double();
            Tensor correct = out.argmax(new LongOptional(1), false).eq(labels);
            for (int i = 0; i < 3; i++) {
                Tensor counted = splits[i].logical_and(labelled);
                expectedAccuracy[i] = correct.logical_and(counted).sum().item_double() / counted.sum().item_double();
            }
        }
        int r = c.rank();
        FullGraphTrainer trainer = new FullGraphTrainer(c, graph(c, AggregationMode.SAR), model,
                new SGD(model.parameters(), new SGDOptions(0.0)),
                new LocalNodes(g.slice(x, r), g.slice(labels, r), g.slice(splits[0], r), g.slice(splits[1], r), g.slice(splits[2], r)));
        EpochStats first = trainer.epoch();
        check.close("loss", expectedLoss, first.trainLoss(), 1e-9);
        check.close("train accuracy", expectedAccuracy[0], first.trainAccuracy(), 1e-12);
        check.close("val accuracy", expectedAccuracy[1], first.validationAccuracy(), 1e-12);
        check.close("test accuracy", expectedAccuracy[2], first.testAccuracy(), 1e-12);
    }

    static Tensor gcnRef(RandomPartitionedGraph g, Tensor x, TensorVector p) {
        return g.dense(EdgeNorm.GCN).matmul(x.matmul(p.get(0))).add(p.get(1));
    }

    static Tensor sageRef(RandomPartitionedGraph g, Tensor x, TensorVector p) {
        return g.dense(EdgeNorm.MEAN).matmul(x).matmul(p.get(0)).add(p.get(2)).add(x.matmul(p.get(1)));
    }

    /** Dense GAT: softmax over in-edges counted with multiplicity, stored self-loops replaced by one per node. */
    static Tensor gatRef(RandomPartitionedGraph g, Tensor x, TensorVector p) {
        return gatRef(g, x, p, null);
    }

    /**
     * Dense GAT with attention dropout: coefficient α_vu of head k times the mask element k of
     * edge (v, u) under {@link #ATTENTION_KEY} (the paper's: dropped after the softmax; both copies
     * of a multi-edge, which share their ends, alike).
     */
    static Tensor gatDroppedRef(RandomPartitionedGraph g, Tensor x, TensorVector p) {
        KeepMask keep = new KeepMask(0.5);
        double[] m = new double[N * N * HEADS];
        for (int v = 0; v < N; v++) {
            for (int u = 0; u < N; u++) {
                for (int k = 0; k < HEADS; k++) {
                    m[(k * N + v) * N + u] = keep.value(ATTENTION_KEY.edge(v, u), k);
                }
            }
        }
        return gatRef(g, x, p, Tensors.doubles(m, HEADS, N, N));
    }

    private static Tensor gatRef(RandomPartitionedGraph g, Tensor x, TensorVector p, Tensor mask) {
        Tensor h = x.matmul(p.get(0));
        Tensor h3 = h.view(N, HEADS, CH);
        Tensor as = h3.mul(p.get(1)).sum(new long[] {-1}, false, new ScalarTypeOptional());
        Tensor ad = h3.mul(p.get(2)).sum(new long[] {-1}, false, new ScalarTypeOptional());
        Tensor counts = g.countsWithOneSelfLoop();
        Tensor[] heads = new Tensor[HEADS];
        for (int k = 0; k < HEADS; k++) {
            Tensor e = torch.leaky_relu(ad.select(1, k).unsqueeze(1).add(as.select(1, k).unsqueeze(0)), new Scalar(0.2));
            Tensor shifted = e.sub(e.amax(new long[] {1}, true).detach());
            Tensor w = counts.mul(shifted.exp());
            Tensor alpha = w.div(w.sum(new long[] {1}, true, new ScalarTypeOptional()));
            heads[k] = (mask == null ? alpha : alpha.mul(mask.select(0, k))).matmul(h3.select(1, k));
        }
        return torch.cat(new TensorVector(heads), 1).add(p.get(3));
    }
}
