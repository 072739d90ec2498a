package io.mn4j.examples;

import io.mn4j.checkpoint.ModelExport;
import io.mn4j.checkpoint.StateDict;
import io.mn4j.communicator.Agreement;
import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.JobInputException;
import io.mn4j.examples.gnn.EarlyStopping;
import io.mn4j.examples.gnn.GnnCheckpoints;
import io.mn4j.examples.gnn.GnnEpoch;
import io.mn4j.examples.gnn.GnnRun;
import io.mn4j.examples.gnn.GraphOptions;
import io.mn4j.examples.gnn.JvmSetup;
import io.mn4j.examples.gnn.Partitions;
import io.mn4j.examples.support.CheckpointOptions;
import io.mn4j.examples.support.Cli;
import io.mn4j.examples.support.ExportOptions;
import io.mn4j.examples.support.Memory;
import io.mn4j.examples.support.MemoryTrend;
import io.mn4j.examples.support.ProgressBar;
import io.mn4j.examples.support.RunOutput;
import io.mn4j.gnn.nn.GnnModel;
import io.mn4j.gnn.partition.NodeOrder;
import io.mn4j.gnn.partition.PartitionBuilder;
import io.mn4j.gnn.partition.PartitionData;
import io.mn4j.gnn.partition.PartitionMetadata;
import io.mn4j.gnn.partition.PartitionReader;
import io.mn4j.gnn.partition.Partitioners;
import io.mn4j.gnn.shard.AggregationMode;
import io.mn4j.iterators.EpochStats;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine;

/**
 * GNN training on a graph partitioned over the ranks of the job (SAR-style full-graph training, or
 * PyG-style sampled mini-batches): rank k holds partition k's nodes, features and in-edges only, and the layers fetch
 * the features of remote neighbours through the {@code GraphShardManager} in the chosen mode.
 *
 * <p>Rank 0 reads or generates the graph, partitions it into one part per rank and sends every
 * rank its own over MPI, which each rank also writes into {@code <out>/partitions} on its own host
 * (or {@code --partitions DIR} names a directory written before by {@code Partition}, of which each
 * host needs only {@code metadata.json} and its own ranks' folders, and every rank loads its own
 * partition); then every rank builds the shard manager, the model and Adam, and trains
 * with a {@code FullGraphTrainer}: one full-graph step per epoch (with {@code --fanouts}, a
 * {@code MiniBatchTrainer}: one step per batch of sampled neighbourhoods), after which rank 0
 * prints the loss, the train/val/test accuracy over all partitions, the epoch time, the bytes all
 * ranks sent and the peak resident memory of every rank. Bad input (a missing or corrupt partition directory,
 * a partition count that does not match the job) gives every rank a clear message and a non-zero
 * exit, never a hang.
 */
@Command(name = "TrainGnn", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Distributed GNN training (GCN, GraphSAGE, GAT) on a graph partitioned over the ranks: full-graph,",
            "or on sampled mini-batches (--fanouts).", ""},
        footer = {"", "Examples:",
            "  scripts/mn4j-run -np 2 io.mn4j.examples.TrainGnn      (synthetic, ~1 min)",
            "  scripts/mn4j-run -np 4 io.mn4j.examples.TrainGnn --data cora --epochs 200",
            "  scripts/mn4j-run -np 2 io.mn4j.examples.TrainGnn --data cora --model gat \\",
            "      --hidden 64 --heads 8 --dropout 0.6 --lr 0.005 --mode oneshot",
            "  java -cp CP io.mn4j.examples.Partition --data cora --parts 4 --out p/cora4",
            "  scripts/mn4j-run -np 4 io.mn4j.examples.TrainGnn --partitions p/cora4",
            "  scripts/mn4j-run -np 3 io.mn4j.examples.TrainGnn --data cora --model sage \\",
            "      --fanouts 10,10 --batch-size 32 --epochs 20",
            "",
            "Writes <out>/epochs.csv (one line per epoch) and <out>/curves.png. Without",
            "--partitions, rank 0 partitions the graph and sends every rank its own",
            "partition over MPI (no shared file system needed); each rank also writes it",
            "to <out>/partitions on its own host. With --partitions DIR, each host needs",
            "only DIR/metadata.json and the part-K folders of its own ranks.",
            "",
            "Native memory: tensors live outside the Java heap. Unless",
            "-Dorg.bytedeco.javacpp.maxPhysicalBytes is given, each rank may hold 90%% of",
            "the memory available at its start divided by the ranks on its node, so a",
            "job too large for the machine stops with an OutOfMemoryError instead of",
            "being killed."})
public final class TrainGnn implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    GraphOptions data = new GraphOptions();

    @Option(names = "--model", paramLabel = "gcn|sage|gat", description = "Layer kind (default: ${DEFAULT-VALUE}).")
    String model = "gcn";

    @Option(names = "--mode", paramLabel = "sar|sequential|oneshot|pipelined",
            description = "How layers fetch remote neighbours: sar (one shard at a time, recomputed in backward), sequential "
                    + "(the same ring, autograd graph kept), oneshot (one exchange of all boundary rows per layer), pipelined "
                    + "(PipeGCN: oneshot with the previous epoch's boundary rows and gradients, this epoch's sent meanwhile). "
                    + "Default: ${DEFAULT-VALUE}.")
    String mode = "sar";

    @Option(names = "--smoothing", paramLabel = "G",
            description = "With --mode pipelined: stale rows and gradients enter as running averages s = G*s + (1-G)*received "
                    + "(PipeGCN-GF; PipeGCN uses 0.95); 0 uses them as received. Default: ${DEFAULT-VALUE}.")
    double smoothing = 0;

    @Option(names = "--staleness", paramLabel = "S",
            description = "With --mode pipelined: read the newest boundary rows and gradients that have arrived if at most S epochs "
                    + "old, waiting only for older (1, PipeGCN's, always reads the last epoch's; above 1 the results depend on "
                    + "timing). Default: ${DEFAULT-VALUE}.")
    int staleness = 1;

    @Option(names = "--fanouts", paramLabel = "F1,F2,...", split = ",",
            description = "Train on sampled mini-batches instead of the full graph (PyG's distributed training; SAGE only): "
                    + "at most Fh in-neighbours per node at hop h from the seeds (-1: all), one per layer, sampled by the rank "
                    + "that owns the node. --mode then sets how evaluation, full-graph, aggregates.")
    int[] fanouts;

    @Option(names = "--batch-size", paramLabel = "B",
            description = "With --fanouts: training seeds per rank and batch (default: ${DEFAULT-VALUE}).")
    int batchSize = 64;

    @Option(names = "--partitions", paramLabel = "DIR",
            description = "Train on this partition directory (written by Partition, one part per rank) instead of partitioning here.")
    Path partitions;

    @Option(names = "--map-features",
            description = "Map each rank's features.npy into memory instead of loading it: rows are read from the file on demand and "
                    + "are not counted by -Dorg.bytedeco.javacpp.maxPhysicalBytes (float32 features; the file must not change while training).")
    boolean mapFeatures;

    @Option(names = "--partitioner", paramLabel = "metis|ldg|range|random",
            description = "How rank 0 partitions the graph when --partitions is not given (default: metis if gpmetis is installed, else ldg).")
    String partitioner;

    @Option(names = "--node-order", paramLabel = "none|rcm", converter = Partitions.OrderConverter.class,
            description = "When rank 0 partitions: the order of each partition's nodes, increasing original id (none) or reverse "
                    + "Cuthill-McKee for locality in aggregation (rcm; default: ${DEFAULT-VALUE}).")
    NodeOrder nodeOrder = PartitionBuilder.DEFAULT_ORDER;

    @Option(names = {"-e", "--epochs"}, paramLabel = "N", description = "Training epochs (default: ${DEFAULT-VALUE}).")
    int epochs = 100;

    @Option(names = "--patience", paramLabel = "N",
            description = "Early stopping as the GAT paper: stop once for N epochs neither the validation accuracy reached its best "
                    + "nor the validation loss its lowest; the model kept (and exported) is the last that reached both. "
                    + "Default: train all --epochs.")
    Integer patience;

    @Option(names = "--hidden", paramLabel = "W", description = "Hidden width; for GAT heads x per-head width (default: ${DEFAULT-VALUE}).")
    int hidden = 16;

    @Option(names = "--layers", paramLabel = "L", description = "Graph layers (default: ${DEFAULT-VALUE}).")
    int layers = 2;

    @Option(names = "--heads", paramLabel = "H", description = "GAT: attention heads of the hidden layers (default: ${DEFAULT-VALUE}).")
    int heads = 8;

    @Option(names = "--dropout", paramLabel = "P", description = "Dropout before every layer, and of GAT's attention coefficients (default: ${DEFAULT-VALUE}).")
    double dropout = 0.5;

    @Option(names = "--batch-norm", description = "Batch norm between the layers, over the nodes of all ranks (as SAR trains large graphs).")
    boolean batchNorm;

    @Option(names = "--lr", paramLabel = "RATE", description = "Adam's learning rate (default: ${DEFAULT-VALUE}).")
    double lr = 0.01;

    @Option(names = "--weight-decay", paramLabel = "W", description = "Adam's weight decay (L2; default: ${DEFAULT-VALUE}).")
    double weightDecay = 5e-4;

    @Option(names = "--seed", paramLabel = "S", description = "Seed of the initial weights, dropout and partitioner (default: ${DEFAULT-VALUE}).")
    long seed = 1;

    @Option(names = "--out", paramLabel = "DIR", description = "Where rank 0 writes epochs.csv and curves.png (default: runs/traingnn).")
    Path out;

    @Option(names = "--no-progress", description = "Do not draw the progress bar.")
    boolean noProgress;

    @Mixin
    CheckpointOptions checkpoint = new CheckpointOptions();

    @Mixin
    ExportOptions export = new ExportOptions();

    @Option(names = "--no-plot", description = "Do not write curves.png.")
    boolean noPlot;

    public static void main(String[] args) {
        JvmSetup.limitNativeMemory();
        JvmSetup.quietLibraryLogs();
        Cli.main(new TrainGnn(), args);
    }

    @Override
    public Integer call() {
        GnnRun.Config config = config();
        int[] code = {0};
        Communicator.run(comm -> code[0] = run(comm, config, System.out));
        return code[0];
    }

    /** The options as a training configuration; bad values are usage errors. */
    GnnRun.Config config() {
        try {
            if (partitions == null && Cli.launchRank() == 0) {
                data.requireData(); // only the rank that partitions reads the graph
            } else {
                data.validate();
            }
            if (epochs < 1) {
                throw new IllegalArgumentException("--epochs must be at least 1, got " + epochs);
            }
            if (patience != null) {
                new EarlyStopping(patience); // checks it
            }
            if (dropout < 0 || dropout >= 1) {
                throw new IllegalArgumentException("--dropout must be in [0, 1), got " + dropout);
            }
            if (!(lr > 0) || weightDecay < 0) {
                throw new IllegalArgumentException("--lr must be positive and --weight-decay non-negative");
            }
            checkpoint.validate(false);
            export.validate(false, checkpoint.resume);
            GnnModel.Kind kind = GnnModel.Kind.parse(model);
            if (partitioner != null) {
                Partitioners.byName(partitioner);
            }
            if (!(smoothing >= 0 && smoothing < 1)) {
                throw new IllegalArgumentException("--smoothing must be in [0, 1), got " + smoothing);
            }
            AggregationMode aggregation = parseMode(mode);
            if (smoothing > 0 && aggregation != AggregationMode.PIPELINED) {
                throw new IllegalArgumentException("--smoothing applies to --mode pipelined only (got --mode " + mode + ")");
            }
            if (staleness < 1) {
                throw new IllegalArgumentException("--staleness must be at least 1, got " + staleness);
            }
            if (staleness > 1 && aggregation != AggregationMode.PIPELINED) {
                throw new IllegalArgumentException("--staleness applies to --mode pipelined only (got --mode " + mode + ")");
            }
            GnnRun.Sampling sampling = null;
            if (fanouts != null) {
                if (aggregation == AggregationMode.PIPELINED) {
                    throw new IllegalArgumentException("--fanouts evaluates full-graph, where --mode pipelined has nothing to pipeline: "
                            + "use sar, sequential or oneshot");
                }
                sampling = new GnnRun.Sampling(fanouts, batchSize);
            } else if (spec.commandLine().getParseResult().hasMatchedOption("--batch-size")) {
                throw new IllegalArgumentException("--batch-size applies to sampled mini-batches: add --fanouts");
            }
            GnnRun.Config c = new GnnRun.Config(kind, aggregation, hidden, layers, heads, dropout, lr, weightDecay, seed, sampling, batchNorm);
            c.validate();
            return c;
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    static AggregationMode parseMode(String m) {
        switch (m.toLowerCase(Locale.ROOT).replace("-", "").replace("_", "")) {
            case "sar": return AggregationMode.SAR;
            case "sequential": return AggregationMode.SEQUENTIAL;
            case "oneshot": return AggregationMode.ONE_SHOT;
            case "pipelined": return AggregationMode.PIPELINED;
            default: throw new IllegalArgumentException("unknown --mode '" + m + "' (sar, sequential, oneshot, pipelined)");
        }
    }

    /** The job on one rank; returns the exit code (non-zero on every rank when the input is bad). */
    int run(Communicator comm, GnnRun.Config config, PrintStream stdout) throws IOException {
        int rank = comm.rank();
        boolean talk = rank == 0;
        Path outDir = out != null ? out : Path.of("runs", "traingnn");
        try {
            Path dir = partitions != null ? partitions : outDir.resolve("partitions");
            if (talk && partitions != null && !data.data.equals("synthetic")) {
                stdout.println("note: --data " + data.data + " is ignored, the partitions in " + partitions + " are used");
            }
            try (PartitionData part = partition(comm, dir, talk ? stdout : null)) {
                Agreement.agree(comm, "checking " + dir, () -> {
                    GnnRun.check(part.metadata(), config);
                    return null;
                });
                try (GnnRun run = GnnRun.start(comm, part, config)) {
                    run.graph().smoothing(smoothing).staleness(staleness);
                    train(comm, run, dir, outDir, talk ? stdout : null);
                }
            }
            return 0;
        } catch (JobInputException e) {
            System.err.println("TrainGnn: rank " + rank + ": " + e.getMessage());
            System.err.flush();
            return 1;
        } catch (OutOfMemoryError e) {
            // Ends the job like any failure of one rank, with what the user can change.
            OutOfMemoryError explained = new OutOfMemoryError(e.getMessage() + " (rank " + rank + "; the limit per rank is "
                    + "-Dorg.bytedeco.javacpp.maxPhysicalBytes, by default 90% of the memory available at start over the "
                    + "ranks of a node: --mode sar holds one remote block at a time, and more ranks hold fewer nodes each)");
            explained.initCause(e);
            throw explained;
        }
    }

    /** This rank's partition: read from --partitions, or cut by rank 0 and sent (then read back as a map with --map-features). */
    private PartitionData partition(Communicator comm, Path dir, PrintStream talk) {
        if (partitions != null) {
            return PartitionReader.load(comm, dir, mapFeatures);
        }
        String method = partitioner != null ? partitioner : Partitions.defaultPartitioner();
        PartitionData cut = Partitions.cutOnRankZero(comm, data, method, seed, nodeOrder, dir, talk);
        if (!mapFeatures) {
            return cut;
        }
        cut.close(); // the rows just written to this host are read on demand from there
        return PartitionReader.load(comm, dir, true);
    }

    private void train(Communicator comm, GnnRun run, Path dir, Path outDir, PrintStream talk) throws IOException {
        int n = comm.size();
        PartitionMetadata meta = run.partition().metadata();
        List<Long> localNodes = comm.allgatherObj(run.partition().numLocalNodes());
        RunOutput output = null;
        if (talk != null) {
            talk.printf("TrainGnn: %s%s over %s, %d parameters%n", run.describe(),
                    (smoothing > 0 ? ", smoothing " + smoothing : "") + (staleness > 1 ? ", staleness " + staleness : ""), Cli.ranks(n),
                    run.parameterCount());
            talk.printf("  partitions %s (%s, edge cut %d, communication volume %d rows); nodes per rank %s%n", dir, meta.method(),
                    meta.edgeCut(), meta.commVolume(), localNodes);
            String title = "TrainGnn " + run.config().kind() + " " + run.config().mode() + " (" + Cli.ranks(n) + ")";
            output = new RunOutput(outDir, title, GnnEpoch.csvHeader(n));
        }
        ProgressBar bar = new ProgressBar(talk != null ? talk : System.out, "training", epochs, talk != null && !noProgress);
        List<GnnEpoch> all = new ArrayList<>();
        if (export.initialize(comm, run.model(), () -> accuracies(run.evaluate()), talk)) {
            return;
        }
        GnnCheckpoints checkpoints = GnnCheckpoints.open(comm, checkpoint, run, smoothing, staleness, talk);
        EarlyStopping stopping = patience == null ? null : new EarlyStopping(patience);
        if (checkpoints != null) {
            all.addAll(checkpoints.restore());
            for (GnnEpoch done : all) {
                if (talk != null) {
                    output.addLine(done.csvLine());
                }
                if (stopping != null) {
                    stopping.observe(done.stats());
                }
            }
        }
        StateDict keptModel = null;
        long t0 = System.nanoTime();
        for (int e = all.size() + 1; e <= epochs; e++) {
            long aggregation0 = run.graph().communicator().stats().totalBytesSent();
            EpochStats s = run.epoch();
            long aggregation = run.graph().communicator().stats().totalBytesSent() - aggregation0;
            List<long[]> ranks = comm.allgatherObj(new long[] {s.bytesSent(), aggregation, Memory.rssBytes(), Memory.peakRssBytes()});
            long bytes = 0;
            long aggregationAll = 0;
            long[] rss = new long[n];
            long[] peak = new long[n];
            for (int r = 0; r < n; r++) {
                bytes += ranks.get(r)[0];
                aggregationAll += ranks.get(r)[1];
                rss[r] = ranks.get(r)[2];
                peak[r] = ranks.get(r)[3];
            }
            GnnEpoch ge = new GnnEpoch(s, bytes, aggregationAll, rss, peak);
            all.add(ge);
            if (talk != null) {
                bar.finish();
                talk.println(ge.humanLine(epochs));
                output.addLine(ge.csvLine());
                bar.update(e, String.format(Locale.ROOT, "loss %.4f", s.trainLoss()));
            }
            if (checkpoints != null) {
                checkpoints.afterEpoch(e, all);
            }
            if (stopping != null) {
                // Every rank sees the same figures; the agreement makes a refusal an error on every rank.
                boolean newlyKept = Agreement.agree(comm, "early stopping", () -> stopping.observe(s));
                if (newlyKept && !export.files.isEmpty()) { // the kept weights matter only to --export
                    if (keptModel != null) {
                        keptModel.close();
                    }
                    keptModel = StateDict.of(run.model());
                }
                if (stopping.shouldStop()) {
                    break;
                }
            }
        }
        double total = (System.nanoTime() - t0) / 1e9;
        restoreKept(stopping, keptModel, all, run, talk);
        export.export(comm, run.model(), ModelExport.Layout.REPLICATED, talk);
        if (talk != null) {
            bar.finish();
            summary(all, total, output, talk);
            if (stopping != null) {
                EpochStats k = stopping.kept();
                talk.printf(Locale.ROOT, "early stopping (patience %d): %s; the model kept is epoch %d's (val %.2f%%, val loss %.4f): "
                        + "test accuracy %.2f%%%n", stopping.patience(), stopping.shouldStop() ? "stopped after epoch " + all.size()
                        : "did not stop within " + epochs + " epochs", k.epoch(), 100 * k.validationAccuracy(), k.validationLoss(),
                        100 * k.testAccuracy());
            }
        }
    }

    /** With --patience and --export, puts the kept epoch's weights back into the model, if they are still in memory. */
    private void restoreKept(EarlyStopping stopping, StateDict keptModel, List<GnnEpoch> all, GnnRun run, PrintStream talk) {
        if (stopping == null || stopping.kept() == null || export.files.isEmpty()) {
            return;
        }
        int last = all.get(all.size() - 1).stats().epoch();
        if (keptModel != null) {
            if (stopping.kept().epoch() != last) {
                keptModel.copyInto(run.model(), "epoch " + stopping.kept().epoch() + "'s weights");
            }
            keptModel.close();
        } else if (stopping.kept().epoch() != last && talk != null) {
            talk.printf("note: the kept epoch %d came before the resume and its weights were not saved: the model is epoch %d's%n",
                    stopping.kept().epoch(), last);
        }
    }

    /** Train, val and test accuracy as rank 0 prints them for --init-from. */
    private static String accuracies(double[] a) {
        return String.format(Locale.ROOT, "accuracy train %.2f%%, val %.2f%%, test %.2f%%", 100 * a[0], 100 * a[1], 100 * a[2]);
    }

    private void summary(List<GnnEpoch> all, double total, RunOutput output, PrintStream talk) throws IOException {
        GnnEpoch best = all.get(0);
        for (GnnEpoch e : all) {
            if (e.stats().validationAccuracy() > best.stats().validationAccuracy()) {
                best = e;
            }
        }
        double later = 0;
        for (int i = 1; i < all.size(); i++) {
            later += all.get(i).stats().seconds();
        }
        talk.printf(Locale.ROOT, "%d epochs in %.1f s (%.3f s per epoch after the first)%n", all.size(), total,
                all.size() > 1 ? later / (all.size() - 1) : total);
        talk.println(MemoryTrend.describe(all.stream().mapToLong(GnnEpoch::maxRssBytes).toArray()) + " (largest rank)");
        if (!noPlot) {
            output.writeCharts(charts(all, output.title()));
            talk.println("curves: " + output.png());
        }
        talk.println("per-epoch numbers: " + output.csv());
        talk.printf(Locale.ROOT, "test accuracy at the best validation epoch (%d, val %.2f%%): %.2f%%%n", best.stats().epoch(),
                100 * best.stats().validationAccuracy(), 100 * best.stats().testAccuracy());
        talk.flush();
    }

    private static List<RunOutput.Panel> charts(List<GnnEpoch> all, String title) {
        int n = all.size();
        double[] x = new double[n];
        double[] loss = new double[n];
        double[] train = new double[n];
        double[] val = new double[n];
        double[] test = new double[n];
        for (int i = 0; i < n; i++) {
            EpochStats s = all.get(i).stats();
            x[i] = s.epoch();
            loss[i] = s.trainLoss();
            train[i] = 100 * s.trainAccuracy();
            val[i] = 100 * s.validationAccuracy();
            test[i] = 100 * s.testAccuracy();
        }
        Map<String, double[]> lossSeries = new LinkedHashMap<>();
        lossSeries.put("training loss", loss);
        Map<String, double[]> accSeries = new LinkedHashMap<>();
        accSeries.put("train", train);
        accSeries.put("val", val);
        accSeries.put("test", test);
        return List.of(new RunOutput.Panel(title + ": loss", "cross-entropy", x, lossSeries),
                new RunOutput.Panel(title + ": accuracy", "accuracy (%)", x, accSeries));
    }
}
