package io.mn4j.mpitests.gnn;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.ReduceOp;
import io.mn4j.gnn.nn.GnnModel;
import io.mn4j.gnn.sampling.Block;
import io.mn4j.gnn.sampling.DistNeighborSampler;
import io.mn4j.gnn.sampling.DistNodeData;
import io.mn4j.gnn.sampling.Sample;
import io.mn4j.gnn.shard.GraphShardManager;
import io.mn4j.gnn.train.FullGraphTrainer;
import io.mn4j.gnn.train.LocalNodes;
import io.mn4j.gnn.train.MiniBatchTrainer;
import io.mn4j.gnn.train.Trainer;
import io.mn4j.iterators.EpochStats;
import io.mn4j.mpitests.Check;
import io.mn4j.mpitests.Scenario;
import io.mn4j.mpitests.ScenarioSuite;
import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.LongStream;
import org.bytedeco.pytorch.SGD;
import org.bytedeco.pytorch.SGDOptions;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * Distributed neighbour sampling, node data lookup and mini-batch training on a partitioned random
 * graph against the same in one process (a sampler, a manager and a trainer on a communicator of
 * this rank alone holding the whole graph): the sampled blocks, node for node and edge for edge;
 * SAGE outputs and parameter gradients on them; with every neighbour sampled, the full-graph
 * model; one epoch of mini-batch training against one full-graph step; and bad input.
 */
public class GnnSamplingSuite implements ScenarioSuite {
    private static final int N = 60, EDGES = 420, IN = 5, CLASSES = 3;
    private static final long SAMPLER_SEED = 17;

    @Override
    public Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = new LinkedHashMap<>();
        s.put("blocks equal one process's and hold sampled graph edges, fanouts [3, 2], three rounds",
                (c, check) -> sameBlocks(c, check, new int[] {3, 2}));
        s.put("blocks with every neighbour, fanouts [-1, -1]", (c, check) -> sameBlocks(c, check, new int[] {-1, -1}));
        s.put("node data: rows of any owner, in request order, float64 rows and int64 labels", GnnSamplingSuite::nodeData);
        s.put("SAGE with dropout 0.5 on sampled blocks equals one process on the same sample: output and parameter gradients",
                (c, check) -> sageOnBlocks(c, check, new int[] {3, 2}, false));
        s.put("SAGE with dropout 0.5 on blocks with every neighbour equals the full-graph model at the seeds",
                (c, check) -> sageOnBlocks(c, check, new int[] {-1, -1}, true));
        s.put("one epoch of mini-batches holding every training node equals one full-graph step in one process",
                GnnSamplingSuite::oneBatchEpoch);
        s.put("mini-batches of 2 seeds per rank: ranks out of seeds take part with none, loss falls", GnnSamplingSuite::smallBatches);
        s.put("mini-batches of 2 seeds per rank, every neighbour, dropout 0.5: an epoch equals one process stepping on each batch's union of seeds",
                GnnSamplingSuite::batchesMatchOneProcess);
        s.put("clear errors on every rank: bad seeds, bad fanouts, wrong model", GnnSamplingSuite::errors);
        return s;
    }

    private static RandomPartitionedGraph graph(Communicator c) {
        return new RandomPartitionedGraph(N, EDGES, c.size(), 23, true);
    }

    /** Seeds of one rank: different per rank and round, of any owner; none on rank 2. */
    private static long[] seeds(Communicator c, int round) {
        if (c.rank() == 2) {
            return new long[0];
        }
        List<Long> out = new ArrayList<>();
        for (long v = (c.rank() * 5L + round) % 7; v < N; v += 7) {
            out.add(v);
        }
        Collections.reverse(out);
        return out.stream().mapToLong(Long::longValue).toArray();
    }

    private static DistNeighborSampler alone(Communicator alone, RandomPartitionedGraph g, int[] fanouts) {
        return new DistNeighborSampler(alone, new long[] {0, N}, g.wholeInEdges(), fanouts, SAMPLER_SEED);
    }

    private static void sameBlocks(Communicator c, Check check, int[] fanouts) {
        RandomPartitionedGraph g = graph(c);
        DistNeighborSampler dist = new DistNeighborSampler(c, g.offsets, g.localInEdges(c.rank()), fanouts, SAMPLER_SEED);
        if (fanouts[0] > 0) {
            long[] all = LongStream.range(0, N).toArray();
            try (Sample r0 = dist.sample(c.rank() == 0 ? all : new long[0], 0); Sample r1 = dist.sample(c.rank() == 0 ? all : new long[0], 1)) {
                Block b0 = r0.blocks().get(r0.blocks().size() - 1), b1 = r1.blocks().get(r1.blocks().size() - 1);
                check.isTrue("rounds 0 and 1 sample other neighbours for the same seeds", c.rank() != 0
                        || !Arrays.equals(b0.col(), b1.col()) || !Arrays.equals(b0.srcNodes(), b1.srcNodes()), "the same blocks");
            }
        }
        try (Communicator one = c.split(c.rank(), 0)) {
            DistNeighborSampler ref = alone(one, g, fanouts);
            for (int round = 0; round < 3; round++) {
                long[] seeds = seeds(c, round);
                try (Sample got = dist.sample(seeds, round); Sample want = ref.sample(seeds, round)) {
                    check.equal("round " + round + " seeds", Arrays.toString(seeds), Arrays.toString(got.seeds()));
                    check.equal("round " + round + " blocks", want.blocks().size(), got.blocks().size());
                    for (int b = 0; b < want.blocks().size(); b++) {
                        Block w = want.blocks().get(b), d = got.blocks().get(b);
                        String k = "round " + round + " block " + b;
                        check.equal(k + " sources", Arrays.toString(w.srcNodes()), Arrays.toString(d.srcNodes()));
                        check.equal(k + " destinations", w.numDst(), d.numDst());
                        check.equal(k + " row offsets", Arrays.toString(w.rowptr()), Arrays.toString(d.rowptr()));
                        check.equal(k + " neighbours", Arrays.toString(w.col()), Arrays.toString(d.col()));
                        // Hop h from the seeds feeds block (hops - 1 - h).
                        checkSampledEdges(check, k, g, d, fanouts[fanouts.length - 1 - b]);
                    }
                    long[] lastDst = Arrays.copyOf(got.blocks().get(got.blocks().size() - 1).srcNodes(), seeds.length);
                    check.equal("round " + round + " last block's destinations are the seeds", Arrays.toString(seeds),
                            Arrays.toString(lastDst));
                    for (int b = 1; b < got.blocks().size(); b++) {
                        Block before = got.blocks().get(b - 1), after = got.blocks().get(b);
                        check.equal("round " + round + " block " + (b - 1) + "'s sources, first " + after.numSrc() + ", are block " + b
                                + "'s sources", Arrays.toString(after.srcNodes()),
                                Arrays.toString(Arrays.copyOf(before.srcNodes(), after.numSrc())));
                        check.equal("round " + round + " block " + (b - 1) + " has a destination per source of block " + b,
                                after.numSrc(), before.numDst());
                    }
                }
            }
        }
    }

    /**
     * Every edge of the block is an in-edge of the graph, taken no more often than stored; each
     * destination has min(fanout, in-degree) of them (every one with fanout -1).
     */
    private static void checkSampledEdges(Check check, String k, RandomPartitionedGraph g, Block b, int fanout) {
        long[] src = b.srcNodes(), rowptr = b.rowptr(), col = b.col();
        boolean ok = true;
        String why = "";
        for (int i = 0; i < b.numDst() && ok; i++) {
            long v = src[i];
            Map<Long, Integer> stored = new HashMap<>();
            for (int e = 0; e < g.src.length; e++) {
                if (g.dst[e] == v) {
                    stored.merge(g.src[e], 1, Integer::sum);
                }
            }
            int degree = stored.values().stream().mapToInt(Integer::intValue).sum();
            int want = fanout < 0 ? degree : Math.min(fanout, degree);
            if (rowptr[i + 1] - rowptr[i] != want) {
                ok = false;
                why = "node " + v + " has " + (rowptr[i + 1] - rowptr[i]) + " sampled neighbours, in-degree " + degree;
            }
            for (long e = rowptr[i]; e < rowptr[i + 1] && ok; e++) {
                long u = src[(int) col[(int) e]];
                if (stored.merge(u, -1, Integer::sum) < 0) {
                    ok = false;
                    why = "node " + v + " got neighbour " + u + " more often than the graph has the edge";
                }
            }
        }
        check.isTrue(k + " edges are graph edges, min(fanout, degree) per node", ok, why);
    }

    private static void nodeData(Communicator c, Check check) {
        RandomPartitionedGraph g = graph(c);
        Tensor x = RandomPartitionedGraph.values(3, torch.ScalarType.Double, N, IN);
        Tensor labels = torch.arange(new Scalar(N)).mul(new Scalar(7));
        DistNodeData rows = new DistNodeData(c, g.offsets, g.slice(x, c.rank()).clone());
        DistNodeData ints = new DistNodeData(c, g.offsets, g.slice(labels, c.rank()).clone());
        long[] ask = c.rank() == 1 ? new long[0] : new long[] {N - 1, 0, 13 % N, 0, (c.rank() * 11L) % N, N / 2};
        Tensor want = ask.length == 0 ? x.narrow(0, 0, 0) : x.index_select(0, Tensors.longs(ask));
        check.tensorsClose("float64 rows", want, rows.gather(ask), 0);
        Tensor wantLabels = ask.length == 0 ? labels.narrow(0, 0, 0) : labels.index_select(0, Tensors.longs(ask));
        check.isTrue("int64 labels", wantLabels.equal(ints.gather(ask)), "labels differ");
    }

    private static GnnModel sage(int layers) {
        return sage(layers, 0.0);
    }

    private static GnnModel sage(int layers, double dropout) {
        torch.manual_seed(81);
        GnnModel m = new GnnModel(GnnModel.Kind.SAGE, IN, 6, CLASSES, layers, dropout, 1);
        m.to(torch.ScalarType.Double, false);
        return m;
    }

    /**
     * On each rank's own seeds: the model on the distributed sample, features fetched from their
     * owners, against the model on one process's sample of the same seeds, features indexed
     * locally, or ({@code fullGraph}) against the full-graph model's rows at the seeds.
     */
    private static void sageOnBlocks(Communicator c, Check check, int[] fanouts, boolean fullGraph) {
        RandomPartitionedGraph g = graph(c);
        Tensor x = RandomPartitionedGraph.values(4, torch.ScalarType.Double, N, IN);
        // Dropout 0.5, masks keyed by (step, node): the step of the round on both sides.
        GnnModel m = sage(fanouts.length, 0.5);
        DistNeighborSampler dist = new DistNeighborSampler(c, g.offsets, g.localInEdges(c.rank()), fanouts, SAMPLER_SEED);
        DistNodeData features = new DistNodeData(c, g.offsets, g.slice(x, c.rank()).clone());
        TensorVector params = m.parameters();
        for (int round = 0; round < 2; round++) {
            long[] seeds = seeds(c, round);
            Tensor r = RandomPartitionedGraph.values(40 + round, torch.ScalarType.Double, seeds.length, CLASSES);
            Tensor outRef;
            Tensor[] gradRef = new Tensor[(int) params.size()];
            try (Communicator one = c.split(c.rank(), 0)) {
                if (fullGraph) {
                    try (GraphShardManager whole = GraphShardManager.build(one, new long[] {0, N}, g.wholeInEdges())) {
                        Tensor all = m.step(round).forward(whole, x, true);
                        outRef = seeds.length == 0 ? all.narrow(0, 0, 0) : all.index_select(0, Tensors.longs(seeds));
                        outRef.mul(r).sum().backward();
                    }
                } else {
                    try (Sample ref = alone(one, g, fanouts).sample(seeds, round)) {
                        Tensor inputs = Tensors.longs(ref.inputNodes());
                        outRef = m.step(round).forward(ref.blocks(), ref.inputNodes().length == 0 ? x.narrow(0, 0, 0) : x.index_select(0, inputs),
                                true);
                        outRef.mul(r).sum().backward();
                    }
                }
            }
            for (int i = 0; i < gradRef.length; i++) {
                Tensor gr = params.get(i).grad();
                gradRef[i] = gr.defined() ? gr.clone() : torch.zeros_like(params.get(i));
                if (gr.defined()) {
                    gr.zero_();
                }
            }
            try (Sample sample = dist.sample(seeds, round)) {
                Tensor out = m.step(round).forward(sample.blocks(), features.gather(sample.inputNodes()), true);
                out.mul(r).sum().backward();
                String k = "round " + round + " (" + seeds.length + " seeds) ";
                check.tensorsClose(k + "output", outRef, out, 1e-12);
                for (int i = 0; i < gradRef.length; i++) {
                    Tensor gr = params.get(i).grad();
                    check.tensorsClose(k + "grad param " + i, gradRef[i], gr.defined() ? gr : torch.zeros_like(params.get(i)), 1e-12);
                    if (gr.defined()) {
                        gr.zero_();
                    }
                }
            }
        }
    }

    /** Labels v mod 3; training nodes the first third of the ids (uneven over ranks, none on the last of 4). */
    private static LocalNodes nodes(RandomPartitionedGraph g, Tensor x, long from, long count) {
        long[] labels = new long[(int) count];
        boolean[] train = new boolean[(int) count], val = new boolean[(int) count], test = new boolean[(int) count];
        for (int i = 0; i < count; i++) {
            long v = from + i;
            labels[i] = v % CLASSES;
            train[i] = v < N / 3;
            val[i] = !train[i] && v % 2 == 0;
            test[i] = !train[i] && !val[i];
        }
        return new LocalNodes(x.narrow(0, from, count).clone(), Tensors.longs(labels), Tensors.bools(train), Tensors.bools(val),
                Tensors.bools(test));
    }

    private static Trainer sgdTrainer(Communicator c, GraphShardManager graph, GnnModel m, LocalNodes nodes, DistNeighborSampler sampler,
            int batch) {
        SGD sgd = new SGD(m.parameters(), new SGDOptions(0.5));
        return sampler == null ? new FullGraphTrainer(c, graph, m, sgd, nodes)
                : new MiniBatchTrainer(c, graph, m, sgd, nodes, sampler, batch, 5);
    }

    private static void oneBatchEpoch(Communicator c, Check check) {
        RandomPartitionedGraph g = graph(c);
        Tensor x = RandomPartitionedGraph.values(6, torch.ScalarType.Double, N, IN);
        GnnModel ref = sage(2);
        EpochStats want;
        try (Communicator one = c.split(c.rank(), 0);
                GraphShardManager whole = GraphShardManager.build(one, new long[] {0, N}, g.wholeInEdges())) {
            want = sgdTrainer(one, whole, ref, nodes(g, x, 0, N), null, 0).epoch();
        }
        GnnModel m = sage(2);
        try (GraphShardManager graph = GraphShardManager.build(c, g.offsets, g.localInEdges(c.rank()))) {
            DistNeighborSampler sampler = new DistNeighborSampler(c, g.offsets, g.localInEdges(c.rank()), new int[] {-1, -1}, 3);
            MiniBatchTrainer t = (MiniBatchTrainer) sgdTrainer(c, graph, m, nodes(g, x, g.offsets[c.rank()], g.rows(c.rank())), sampler, N);
            check.equal("batches per epoch", 1, t.batchesPerEpoch());
            EpochStats got = t.epoch();
            check.close("loss", want.trainLoss(), got.trainLoss(), 1e-12);
            check.close("train accuracy after the step", want.trainAccuracy(), got.trainAccuracy(), 0);
            check.close("test accuracy after the step", want.testAccuracy(), got.testAccuracy(), 0);
            TensorVector p = m.parameters(), q = ref.parameters();
            for (long i = 0; i < p.size(); i++) {
                check.tensorsClose("parameter " + i + " after the step", q.get(i), p.get(i), 1e-12);
            }
        }
    }

    private static void smallBatches(Communicator c, Check check) {
        RandomPartitionedGraph g = graph(c);
        Tensor x = RandomPartitionedGraph.values(7, torch.ScalarType.Double, N, IN);
        GnnModel m = sage(2);
        try (GraphShardManager graph = GraphShardManager.build(c, g.offsets, g.localInEdges(c.rank()))) {
            DistNeighborSampler sampler = new DistNeighborSampler(c, g.offsets, g.localInEdges(c.rank()), new int[] {3, 2}, 3);
            LocalNodes nodes = nodes(g, x, g.offsets[c.rank()], g.rows(c.rank()));
            MiniBatchTrainer t = (MiniBatchTrainer) sgdTrainer(c, graph, m, nodes, sampler, 2);
            long most = c.allreduce(nodes.train().sum(), ReduceOp.MAX).item_long();
            check.equal("batches per epoch: the most training nodes of a rank over 2", (int) ((most + 1) / 2), t.batchesPerEpoch());
            double first = t.epoch().trainLoss(), last = first;
            for (int e = 0; e < 15; e++) {
                last = t.epoch().trainLoss();
            }
            check.isTrue("loss falls over 16 epochs", last < 0.8 * first, "first " + first + ", last " + last);
        }
    }

    /** What every rank's message says of the failing rank: its own message names no rank, the others' name it. */
    private static String names(Communicator c, int bad) {
        return c.rank() == bad ? "" : "rank " + bad;
    }

    private static void errors(Communicator c, Check check) {
        RandomPartitionedGraph g = graph(c);
        DistNeighborSampler sampler = new DistNeighborSampler(c, g.offsets, g.localInEdges(c.rank()), new int[] {2}, 1);
        int bad = c.size() - 1;
        check.throwsWith("a seed outside the graph on the last rank: every rank throws, naming it",
                () -> sampler.sample(c.rank() == bad ? new long[] {1, N} : new long[] {1}, 0).close(),
                names(c, bad), "sampling round 0", "node " + N + ", outside the graph's " + N + " nodes");
        check.throwsWith("a repeated seed on the last rank: every rank throws",
                () -> sampler.sample(c.rank() == bad ? new long[] {4, 9, 4} : new long[0], 0).close(),
                names(c, bad), "node 4 is seed 0 and seed 2", "distinct");
        check.throwsWith("fanout 0 on the last rank: every rank throws",
                () -> new DistNeighborSampler(c, g.offsets, g.localInEdges(c.rank()), c.rank() == bad ? new int[] {0} : new int[] {2}, 1),
                names(c, bad), "fanout must be at least 1");
        DistNodeData rows = new DistNodeData(c, g.offsets, g.slice(RandomPartitionedGraph.values(3, torch.ScalarType.Double, N, IN),
                c.rank()).clone());
        check.throwsWith("a node outside the graph asked for on the last rank: every rank throws",
                () -> rows.gather(c.rank() == bad ? new long[] {-1} : new long[] {0}), names(c, bad), "node -1 is outside");
        if (c.size() > 1) {
            // Partitions differ in size: each rank passes its neighbour's in-edges.
            check.throwsWith("in-edges of another partition's size", () -> new DistNeighborSampler(c, g.offsets,
                    g.localInEdges((c.rank() + 1) % c.size()), new int[] {2}, 1), "in-edge matrix");
            check.throwsWith("other fanouts on the last rank: every rank throws, showing both",
                    () -> new DistNeighborSampler(c, g.offsets, g.localInEdges(c.rank()), c.rank() == bad ? new int[] {3} : new int[] {2}, 1),
                    "every rank must have the same sampler fanouts", "[3]", "[2]");
            check.throwsWith("another round on the last rank: every rank throws",
                    () -> sampler.sample(new long[] {c.rank()}, c.rank() == bad ? 5 : 4).close(), "every rank must have the same sampling round");
            try (GraphShardManager graph = GraphShardManager.build(c, g.offsets, g.localInEdges(c.rank()))) {
                Tensor x = RandomPartitionedGraph.values(3, torch.ScalarType.Double, N, IN);
                LocalNodes nodes = nodes(g, x, g.offsets[c.rank()], g.rows(c.rank()));
                check.throwsWith("another batch size on the last rank: every rank throws",
                        () -> sgdTrainer(c, graph, sage(2), nodes, sampler, c.rank() == bad ? 3 : 2), "every rank must have the same batch size");
                check.throwsWith("batch size 0 on the last rank: every rank throws",
                        () -> sgdTrainer(c, graph, sage(2), nodes, sampler, c.rank() == bad ? 0 : 2), names(c, bad),
                        "the batch size must be at least 1, got 0");
            }
        }
        try (GraphShardManager graph = GraphShardManager.build(c, g.offsets, g.localInEdges(c.rank()))) {
            LocalNodes good = nodes(g, RandomPartitionedGraph.values(3, torch.ScalarType.Double, N, IN), g.offsets[c.rank()], g.rows(c.rank()));
            Tensor labels = good.labels().clone();
            if (c.rank() == bad && labels.size(0) > 0) {
                labels.get(labels.size(0) - 1).fill_(new Scalar(CLASSES));
            }
            LocalNodes wrong = new LocalNodes(good.features(), labels, good.train(), good.val(), good.test());
            String label = "has label " + CLASSES + ", outside the model's " + CLASSES + " classes";
            check.throwsWith("a label out of range on the last rank, full-graph: every rank throws",
                    () -> sgdTrainer(c, graph, sage(2), wrong, null, 0), names(c, bad), label);
            check.throwsWith("a label out of range on the last rank, mini-batches: every rank throws",
                    () -> sgdTrainer(c, graph, sage(2), wrong, sampler2(c, g), 2), names(c, bad), label);
        }
        try (Sample s = sampler.sample(new long[] {0}, 1)) {
            GnnModel gcn = new GnnModel(GnnModel.Kind.GCN, IN, 4, CLASSES, 1, 0, 1);
            check.throwsWith("a GCN model on blocks", () -> gcn.forward(s.blocks(), rows.gather(s.inputNodes()).to(torch.ScalarType.Float),
                    false), "train SAGE models", "GCN");
            GnnModel deep = new GnnModel(GnnModel.Kind.SAGE, IN, 4, CLASSES, 2, 0, 1);
            check.throwsWith("a 2-layer model on a 1-hop sample", () -> deep.forward(s.blocks(),
                    rows.gather(s.inputNodes()).to(torch.ScalarType.Float), false), "1 hops for a model of 2 layers");
        }
        // After every error, the ranks still sample in step.
        try (Sample s = sampler.sample(new long[] {c.rank() % N}, 2)) {
            check.equal("a sample after the errors", 1, s.blocks().size());
        }
    }

    private static DistNeighborSampler sampler2(Communicator c, RandomPartitionedGraph g) {
        return new DistNeighborSampler(c, g.offsets, g.localInEdges(c.rank()), new int[] {2, 2}, 1);
    }

    /**
     * Mini-batches of 2 seeds per rank with every neighbour: one epoch equals one process taking
     * an SGD step per batch on the mean loss over the union of the ranks' seeds of that batch
     * (full-graph SAGE at those seeds), with uneven training nodes per rank.
     */
    private static void batchesMatchOneProcess(Communicator c, Check check) {
        RandomPartitionedGraph g = graph(c);
        Tensor x = RandomPartitionedGraph.values(8, torch.ScalarType.Double, N, IN);
        // Dropout masks keyed by (step, node): each batch's masks are the full-graph step's at the sampled nodes.
        GnnModel m = sage(2, 0.5);
        GnnModel ref = sage(2, 0.5);
        try (GraphShardManager graph = GraphShardManager.build(c, g.offsets, g.localInEdges(c.rank()))) {
            DistNeighborSampler sampler = new DistNeighborSampler(c, g.offsets, g.localInEdges(c.rank()), new int[] {-1, -1}, 3);
            MiniBatchTrainer t = (MiniBatchTrainer) sgdTrainer(c, graph, m, nodes(g, x, g.offsets[c.rank()], g.rows(c.rank())), sampler, 2);
            List<long[]> union = new ArrayList<>();
            for (int b = 0; b < t.batchesPerEpoch(); b++) {
                union.add(c.allgatherObj(t.batch(0, b)).stream().flatMapToLong(Arrays::stream).toArray());
            }
            check.isTrue("more than one batch", union.size() > 1, union.size() + " batches");
            try (Communicator one = c.split(c.rank(), 0);
                    GraphShardManager whole = GraphShardManager.build(one, new long[] {0, N}, g.wholeInEdges())) {
                SGD sgd = new SGD(ref.parameters(), new SGDOptions(0.5));
                Tensor labels = torch.arange(new Scalar(N)).remainder(new Scalar(CLASSES));
                for (long[] seeds : union) {
                    sgd.zero_grad();
                    Tensor at = Tensors.longs(seeds);
                    Tensor out = ref.forward(whole, x, true).index_select(0, at);
                    torch.nll_loss(torch.log_softmax(out, 1), labels.index_select(0, at)).backward();
                    sgd.step();
                }
            }
            t.trainEpoch();
            TensorVector p = m.parameters(), q = ref.parameters();
            for (long i = 0; i < p.size(); i++) {
                check.tensorsClose("parameter " + i + " after " + union.size() + " batches", q.get(i), p.get(i), 1e-12);
            }
        }
    }
}
