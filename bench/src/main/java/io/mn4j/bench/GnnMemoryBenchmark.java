package io.mn4j.bench;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.ReduceOp;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.graph.SyntheticGraphs;
import io.mn4j.gnn.nn.GnnModel;
import io.mn4j.gnn.partition.PartitionData;
import io.mn4j.gnn.partition.PartitionMetadata;
import io.mn4j.gnn.partition.PartitionReader;
import io.mn4j.gnn.partition.PartitionWriter;
import io.mn4j.gnn.partition.Partitioners;
import io.mn4j.gnn.sampling.DistNeighborSampler;
import io.mn4j.gnn.shard.AggregationMode;
import io.mn4j.gnn.shard.GraphShardManager;
import io.mn4j.gnn.train.LocalNodes;
import io.mn4j.gnn.train.MiniBatchTrainer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Adam;
import org.bytedeco.pytorch.AdamOptions;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptional;
import org.bytedeco.pytorch.global.torch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine;

/**
 * Peak resident memory per rank and epoch time of full-graph GNN training on a partitioned
 * synthetic graph, per model (GCN, GAT), aggregation mode (SAR, sequential, one-shot, pipelined)
 * and number of ranks; and of GraphSAGE on sampled mini-batches (mode "sampled", PyG's
 * distributed training: an epoch is a pass over every rank's training nodes in batches). Three
 * steps, run by {@code bench/gnn-memory.sh}:
 *
 * <ol>
 *   <li>{@code partition} (one process, no MPI): draws a planted-partition graph and writes one
 *       partition directory per rank count ({@code DIR/p1}, {@code DIR/p2}, ...), so that graph
 *       generation never counts in a rank's memory;</li>
 *   <li>{@code run} (under {@code mpirun -np N}, one launch per configuration so every peak is
 *       that of fresh processes): each rank loads MPI and LibTorch, runs a tiny warm-up, records
 *       its resident size as the <em>baseline</em>, loads only its own partition, builds the
 *       {@link GraphShardManager} and the model, and trains full-graph epochs (forward, backward,
 *       gradient sum, Adam step). Peak resident size (VmHWM) is taken per phase — load, and per
 *       epoch forward and backward+step — and reported above the baseline; rank 0 appends one CSV
 *       row with the maximum (and mean) over ranks;</li>
 *   <li>{@code report}: prints the table, checks the targets of issue 6, and draws the PNG.</li>
 * </ol>
 *
 * <p>Every epoch runs inside its own {@link PointerScope} (option {@code --scope}), so Java
 * handles of the epoch's tensors are released when it ends instead of whenever the garbage
 * collector runs; what the peak then measures is what the epoch itself holds at once.
 */
@Command(name = "gnn-memory-benchmark", mixinStandardHelpOptions = true,
        subcommands = {GnnMemoryBenchmark.PartitionStep.class, GnnMemoryBenchmark.RunStep.class,
            GnnBenchReport.class},
        description = "Peak memory per rank and epoch time of partitioned full-graph GNN training (SAR, SEQUENTIAL, ONE_SHOT, PIPELINED, sampled).")
public final class GnnMemoryBenchmark implements Callable<Integer> {
    /** The world communicator, set by {@link #main} for the {@code run} step only. */
    private static Communicator world;

    @Override
    public Integer call() {
        new CommandLine(this).usage(System.out);
        return 2;
    }

    public static void main(String[] args) {
        if (args.length > 0 && args[0].equals("run")) {
            int[] code = new int[1];
            Communicator.run(w -> {
                world = w;
                code[0] = new CommandLine(new GnnMemoryBenchmark()).execute(args);
            });
            System.exit(code[0]);
        }
        System.exit(new CommandLine(new GnnMemoryBenchmark()).execute(args));
    }

    /** Name of the partition directory for {@code ranks} ranks under the data root. */
    static String partitionDir(int ranks) {
        return "p" + ranks;
    }

    // ------------------------------------------------------------------------------------------

    /** Step 1: graph generation and partitioning, once per rank count. */
    @Command(name = "partition", mixinStandardHelpOptions = true,
            description = "Draw a planted-partition graph and write DIR/pN for every N of --parts.")
    static final class PartitionStep implements Callable<Integer> {
        @Option(names = "--out", required = true, description = "Data root; partitions go to OUT/p1, OUT/p2, ...")
        Path out;

        @Option(names = "--parts", split = ",", defaultValue = "1,2,4", description = "Rank counts (default: ${DEFAULT-VALUE}).")
        List<Integer> parts;

        @Option(names = "--nodes", defaultValue = "400000", description = "Nodes (default: ${DEFAULT-VALUE}).")
        long nodes;

        @Option(names = "--degree", defaultValue = "25", description = "Average degree (default: ${DEFAULT-VALUE}).")
        double degree;

        @Option(names = "--features", defaultValue = "128", description = "Feature size (default: ${DEFAULT-VALUE}).")
        int features;

        @Option(names = "--classes", defaultValue = "16", description = "Classes (default: ${DEFAULT-VALUE}).")
        int classes;

        @Option(names = "--partitioner", defaultValue = "metis", description = "metis, ldg, range or random (default: ${DEFAULT-VALUE}).")
        String partitioner;

        @Option(names = "--seed", defaultValue = "1", description = "Seed of the graph and the partitioner (default: ${DEFAULT-VALUE}).")
        long seed;

        @Option(names = "--force", description = "Rewrite partitions that already exist for the same parameters.")
        boolean force;

        @Override
        public Integer call() throws IOException {
            String stamp = String.format(Locale.ROOT, "nodes=%d degree=%s features=%d classes=%d partitioner=%s seed=%d%n",
                    nodes, degree, features, classes, partitioner, seed);
            Path stampFile = out.resolve("graph.txt");
            boolean same = Files.exists(stampFile) && Files.readString(stampFile).equals(stamp);
            List<Integer> todo = new ArrayList<>();
            for (int n : parts) {
                if (force || !same || !Files.exists(out.resolve(partitionDir(n)).resolve(PartitionMetadata.FILE))) {
                    todo.add(n);
                }
            }
            if (todo.isEmpty()) {
                System.out.println("partitions for " + parts + " ranks already in " + out + " (" + stamp.strip() + ")");
                return 0;
            }
            Files.createDirectories(out);
            Files.deleteIfExists(stampFile);
            long t0 = System.nanoTime();
            try (Graph g = SyntheticGraphs.plantedPartition(nodes, degree, classes, features, seed)) {
                System.out.printf(Locale.ROOT, "graph: %d nodes, %d directed edges, %d features, %d classes (%.1f s)%n",
                        g.numNodes(), g.numEdges(), g.numFeatures(), g.numClasses(), (System.nanoTime() - t0) / 1e9);
                for (int n : todo) {
                    long t1 = System.nanoTime();
                    PartitionMetadata m = PartitionWriter.partitionAndWrite(out.resolve(partitionDir(n)), g,
                            Partitioners.byName(partitioner), n, seed);
                    System.out.printf(Locale.ROOT, "p%d: %s, edge cut %.1f%%, nodes per part %s, boundary rows sent %d (%.1f s)%n",
                            n, m.method(), 100.0 * m.edgeCut() / Math.max(1, m.numEdges()), Arrays.toString(m.partNodeCounts()),
                            m.commVolume(), (System.nanoTime() - t1) / 1e9);
                }
            }
            Files.writeString(stampFile, stamp);
            return 0;
        }
    }

    // ------------------------------------------------------------------------------------------

    /** Step 2: one configuration, every rank, under mpirun. */
    @Command(name = "run", mixinStandardHelpOptions = true,
            description = "Train on DATA/pN (N = ranks) and append peak memory and epoch times to the CSV (run under mpirun).")
    static final class RunStep implements Callable<Integer> {
        @Option(names = "--data", required = true, description = "Data root written by 'partition'.")
        Path data;

        @Option(names = "--model", defaultValue = "gcn", description = "gcn or gat (default: ${DEFAULT-VALUE}).")
        String model;

        @Option(names = "--mode", defaultValue = "sar", description = "sar, sequential, one-shot, pipelined (PipeGCN's stale exchange) "
                + "or sampled (mini-batches on sampled neighbourhoods, --model sage) (default: ${DEFAULT-VALUE}).")
        String mode;

        @Option(names = "--fanouts", split = ",", defaultValue = "10,10,10",
                description = "Sampled mode: neighbours per node and hop, one per layer (default: ${DEFAULT-VALUE}).")
        int[] fanouts;

        @Option(names = "--batch-size", defaultValue = "1024", description = "Sampled mode: seeds per rank and batch (default: ${DEFAULT-VALUE}).")
        int batchSize;

        @Option(names = "--staleness", defaultValue = "1", description = "Pipelined mode: the most epochs old the rows a pass reads "
                + "may be (default: ${DEFAULT-VALUE}).")
        int staleness;

        @Option(names = "--epochs", defaultValue = "2", description = "Epochs (default: ${DEFAULT-VALUE}).")
        int epochs;

        @Option(names = "--hidden", defaultValue = "128", description = "Hidden width (default: ${DEFAULT-VALUE}).")
        long hidden;

        @Option(names = "--layers", defaultValue = "3", description = "Graph layers (default: ${DEFAULT-VALUE}).")
        int layers;

        @Option(names = "--heads", defaultValue = "4", description = "Attention heads of hidden GAT layers (default: ${DEFAULT-VALUE}).")
        int heads;

        @Option(names = "--dropout", defaultValue = "0", description = "Dropout (default: ${DEFAULT-VALUE}).")
        double dropout;

        @Option(names = "--prefetch", defaultValue = "1", description = "Remote blocks fetched ahead in SAR and SEQUENTIAL mode (default: ${DEFAULT-VALUE}).")
        int prefetch;

        @Option(names = "--edges-per-step", defaultValue = "-1",
                description = "SAR mode: most edges per step of an attention layer; 0 = whole shards, negative = the manager's default (default: ${DEFAULT-VALUE}).")
        long edgesPerStep;

        @Option(names = "--scope", defaultValue = "epoch", description = "epoch: one PointerScope per epoch; none: leave tensor handles to the GC (default: ${DEFAULT-VALUE}).")
        String scope;

        @Option(names = "--seed", defaultValue = "1", description = "Seed of the initial parameters (default: ${DEFAULT-VALUE}).")
        long seed;

        @Option(names = "--csv", description = "CSV file rank 0 appends one row to.")
        Path csv;

        @Override
        public Integer call() throws Exception {
            return new GnnRankRun(world, this).run();
        }

        boolean sampled() {
            return mode.equalsIgnoreCase("sampled");
        }

        /** The full-graph mode (not for sampled runs, which build no shard manager). */
        AggregationMode aggregationMode() {
            switch (mode.toLowerCase(Locale.ROOT)) {
                case "sar": case "1": return AggregationMode.SAR;
                case "sequential": case "2": return AggregationMode.SEQUENTIAL;
                case "one-shot": case "oneshot": case "one_shot": case "3": return AggregationMode.ONE_SHOT;
                case "pipelined": case "4": return AggregationMode.PIPELINED;
                default: throw new CommandLine.ParameterException(new CommandLine(this), "unknown mode '" + mode
                        + "' (sar, sequential, one-shot, pipelined, sampled)");
            }
        }

        GnnModel.Kind kind() {
            GnnModel.Kind k = GnnModel.Kind.parse(model);
            if ((k == GnnModel.Kind.SAGE) != sampled()) {
                throw new CommandLine.ParameterException(new CommandLine(this),
                        "the benchmark covers gcn and gat full-graph, and sage in sampled mode (got " + model + ", " + mode + ")");
            }
            if (sampled() && fanouts.length != layers) {
                throw new CommandLine.ParameterException(new CommandLine(this), fanouts.length + " fanouts for " + layers + " layers");
            }
            return k;
        }
    }

    /** What one rank does in the {@code run} step. */
    static final class GnnRankRun {
        private final Communicator comm;
        private final RunStep o;
        private final GnnMemoryProbe probe = new GnnMemoryProbe();

        GnnRankRun(Communicator comm, RunStep options) {
            this.comm = comm;
            this.o = options;
        }

        int run() throws IOException {
            int rank = comm.rank(), size = comm.size();
            AggregationMode mode = o.sampled() ? null : o.aggregationMode();
            GnnModel.Kind kind = o.kind();
            if (!o.scope.equals("epoch") && !o.scope.equals("none")) {
                throw new IllegalArgumentException("--scope must be epoch or none, got " + o.scope);
            }
            Path dir = o.data.resolve(partitionDir(size));
            warmUp();
            comm.barrier();
            long baseline = probe.rss();
            probe.reset();
            probe.resetHeapPeaks();

            // Load: only this rank's partition, then the shards (full-graph) or the sampler, the
            // model and the optimizer.
            PartitionData part = PartitionReader.load(comm, dir);
            GraphShardManager graph = o.sampled() ? null : GraphShardManager.build(comm, part).mode(mode).staleness(o.staleness)
                    .prefetchDepth(o.prefetch).edgesPerStep(o.edgesPerStep);
            Tensor x = part.features();
            Tensor labels = part.labels();
            Tensor trainIdx = part.trainMask().nonzero().squeeze(1);
            double globalTrain = comm.allreduce(torch.scalar_tensor(new Scalar(trainIdx.size(0))).to(torch.ScalarType.Double),
                    ReduceOp.SUM).item_double();
            int classes = part.metadata().numClasses();
            torch.manual_seed(o.seed);
            GnnModel model = new GnnModel(kind, x.size(1), o.hidden, classes, o.layers, o.dropout, o.heads);
            comm.bcastData(model, 0);
            Adam adam = new Adam(model.parameters(), new AdamOptions(0.01));
            MiniBatchTrainer sampledTrainer = !o.sampled() ? null : new MiniBatchTrainer(comm, null, model, adam,
                    new LocalNodes(x, labels, part.trainMask(), part.valMask(), part.testMask()),
                    new DistNeighborSampler(comm, part.metadata().partNodeOffsets(), part.adjacency(), o.fanouts, o.seed), o.batchSize, o.seed);
            comm.barrier();
            long dataRss = probe.rss() - baseline;
            long loadPeak = probe.peak() - baseline;

            double[] seconds = new double[o.epochs];
            double[] losses = new double[o.epochs];
            long[] fwdPeak = new long[o.epochs];
            long[] bwdPeak = new long[o.epochs];
            long[] endRss = new long[o.epochs];
            long[] heldAfterForward = new long[o.epochs];
            for (int e = 0; e < o.epochs; e++) {
                comm.barrier();
                probe.reset();
                long t0 = System.nanoTime();
                PointerScope scope = o.scope.equals("epoch") ? new PointerScope() : null;
                try {
                    if (sampledTrainer != null) {
                        // Many batches, each a forward and a backward: the epoch's peak counts as
                        // the backward phase's, the forward phase's stays 0.
                        losses[e] = sampledTrainer.trainEpoch();
                    } else {
                        adam.zero_grad();
                        graph.nextEpoch();
                        Tensor out = model.forward(graph, x, true);
                        Tensor logp = torch.log_softmax(out.index_select(0, trainIdx), 1);
                        Tensor loss = torch.nll_loss(logp, labels.index_select(0, trainIdx), new TensorOptional(), 2, Graph.UNLABELLED)
                                .div(new Scalar(globalTrain));
                        fwdPeak[e] = probe.peak() - baseline;
                        heldAfterForward[e] = probe.rss() - baseline;
                        probe.reset();
                        loss.backward();
                        comm.sumGrad(model); // each rank's loss is its share of the global mean
                        adam.step();
                        losses[e] = comm.allreduce(loss.detach().to(torch.ScalarType.Double), ReduceOp.SUM).item_double();
                    }
                } finally {
                    if (scope != null) {
                        scope.close();
                    }
                }
                seconds[e] = (System.nanoTime() - t0) / 1e9;
                bwdPeak[e] = probe.peak() - baseline;
                endRss[e] = probe.rss() - baseline;
            }
            long peak = loadPeak;
            for (int e = 0; e < o.epochs; e++) {
                peak = Math.max(peak, Math.max(fwdPeak[e], bwdPeak[e]));
            }
            long halo = 0;
            for (int p = 0; graph != null && p < size; p++) {
                halo += graph.rowsReceivedFrom(p);
            }
            GnnBenchReport.RankReport mine = new GnnBenchReport.RankReport(rank, baseline, dataRss, loadPeak, fwdPeak, heldAfterForward, bwdPeak, endRss, peak, seconds,
                    halo, part.numLocalNodes(), part.numLocalEdges(), probe.heapPeak(), probe.canReset());
            List<GnnBenchReport.RankReport> all = comm.allgatherObj(mine);
            if (rank == 0) {
                GnnBenchReport.Row row = GnnBenchReport.Row.of(kind.name().toLowerCase(Locale.ROOT), o.sampled() ? "sampled" : modeName(mode),
                        size, torch.get_num_threads(),
                        part.metadata(), o, all, losses);
                System.out.println(row.describe(all));
                if (o.csv != null) {
                    row.append(o.csv);
                }
            }
            comm.barrier();
            if (graph != null) {
                graph.close();
            }
            part.close();
            return 0;
        }

        /**
         * Brings LibTorch to the state it has during training (thread pool, allocator, the kernels
         * the layers use), on tiny tensors, so the baseline includes LibTorch's own fixed memory.
         */
        private static void warmUp() {
            try (PointerScope s = new PointerScope()) {
                Tensor a = torch.randn(256, 64).set_requires_grad(true);
                Tensor w = torch.randn(64, 32);
                Tensor offsets = torch.arange(new Scalar(0), new Scalar(257), new Scalar(1)).to(torch.ScalarType.Long);
                Tensor idx = torch.arange(new Scalar(256)).to(torch.ScalarType.Long);
                Tensor h = a.matmul(w);
                Tensor bag = torch.embedding_bag(h, idx, offsets, false, 0, false, new TensorOptional(), true).get0();
                Tensor y = torch.elu(bag).index_add(0, idx, torch.leaky_relu(h, new Scalar(0.2)).exp()).sum();
                y.backward();
            }
        }

    }

    /** Mode names used in the CSV and the table. */
    static String modeName(AggregationMode m) {
        switch (m) {
            case SAR: return "sar";
            case SEQUENTIAL: return "sequential";
            case PIPELINED: return "pipelined";
            default: return "one-shot";
        }
    }

    /** SAR's mode number (1, 2, 3; 4 for PipeGCN's, 5 for sampled mini-batches) of a mode name. */
    static int modeNumber(String name) {
        switch (name) {
            case "sar": return 1;
            case "sequential": return 2;
            case "pipelined": return 4;
            case "sampled": return 5;
            default: return 3;
        }
    }
}
