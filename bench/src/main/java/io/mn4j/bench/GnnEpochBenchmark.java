package io.mn4j.bench;

import io.mn4j.communicator.Agreement;
import io.mn4j.communicator.Communicator;
import io.mn4j.examples.gnn.GnnRun;
import io.mn4j.examples.gnn.GraphOptions;
import io.mn4j.examples.gnn.JvmSetup;
import io.mn4j.examples.gnn.Partitions;
import io.mn4j.examples.support.Cli;
import io.mn4j.gnn.graph.Csr;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.nn.GnnModel;
import io.mn4j.gnn.partition.NodeOrder;
import io.mn4j.gnn.partition.PartitionData;
import io.mn4j.gnn.partition.PartitionMetadata;
import io.mn4j.gnn.partition.PartitionReader;
import io.mn4j.gnn.partition.PartitionWriter;
import io.mn4j.gnn.partition.Partitioners;
import io.mn4j.gnn.shard.AggregationMode;
import io.mn4j.gnn.shard.EdgeNorm;
import io.mn4j.gnn.shard.GraphShardManager;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Adam;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.global.torch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * What mn4j's distributed machinery costs on one rank, and what one-shot aggregation sends.
 *
 * <p><b>Epoch time (run with 1 rank).</b> One epoch is what {@code TrainGnn} does per epoch: a
 * training step of Kipf and Welling's 2-layer GCN (dropout, forward, cross-entropy over the
 * training nodes, backward, Adam with weight decay) and an evaluation forward with the accuracy of
 * the three splits. Variants, measured in one run with their epochs interleaved (so that the
 * machine's drift hits all alike), medians reported:
 * <ul>
 *   <li>{@code mn4j SAR}, {@code mn4j ONE_SHOT}: {@link GnnRun} (the shard manager, {@code GCNConv},
 *       {@code FullGraphTrainer} with its all-reduces, a {@code PointerScope} per epoch) on the graph
 *       written and loaded as one partition. With one rank the modes differ only in bookkeeping;
 *   <li>{@code plain embedding_bag}: the same model written directly with LibTorch ops on the
 *       whole graph, no mn4j: {@code D^-1/2 (A+I) D^-1/2} as a CSR with its weights, aggregation by
 *       {@code torch.embedding_bag} (sum mode, {@code per_sample_weights} = the normalised edge
 *       weights, {@code include_last_offset}) and LibTorch's own autograd backward;
 *   <li>{@code plain sparse_csr}: the same with a {@code sparse_csr} tensor and {@code matmul};
 *   <li>{@code plain embedding_bag, torch.dropout}: the first plain variant with LibTorch's
 *       {@code torch.dropout} instead of the Java-drawn mask the other variants use (mn4j's
 *       {@code Dropout}; the plain variants inline the same few lines), to show what that costs.
 * </ul>
 * Every variant's time is wall time per epoch and the process CPU time per epoch (more robust on a
 * shared machine). The ratio is mn4j over the fastest plain variant with the same dropout. With
 * {@code --node-order none,rcm} the mn4j variants run once per node order of the partition file,
 * interleaved with the others, and the speed-up of each order over the first is printed;
 * {@code --no-plain} leaves the plain variants out.
 *
 * <p><b>Bytes per layer (run with 2 or more ranks).</b> In one-shot mode each GCN layer sends the
 * boundary rows of its (post-linear) features once: the bytes all ranks send per layer (the
 * manager's {@code alltoall} and {@code isend} counters) must equal the partitioner's
 * communication volume (boundary rows over all partition pairs, from the partition metadata) ×
 * layer width × 4 bytes, and the manager's own row counts; also over one whole epoch (forward,
 * the gradients' way back, evaluation forward: 3× the layer sum).
 *
 * <p>Prints a table and writes a CSV. {@code bench/gnn-epoch.sh} runs both parts.
 */
@Command(name = "GnnEpochBenchmark", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Epoch time of TrainGnn's step on 1 rank vs a plain LibTorch GCN; bytes per layer in one-shot mode (N ranks).", ""})
public final class GnnEpochBenchmark implements Callable<Integer> {
    @Option(names = "--data", split = ",", paramLabel = "synthetic|cora|FILE",
            description = "Graphs to measure, comma separated (default: synthetic,cora; synthetic is TrainGnn's default graph).")
    List<String> data = List.of("synthetic", "cora");

    @Option(names = "--epochs", paramLabel = "N", description = "Timed epochs per variant (default: ${DEFAULT-VALUE}).")
    int epochs = 20;

    @Option(names = "--warmup", paramLabel = "N", description = "Untimed epochs per variant first (default: ${DEFAULT-VALUE}).")
    int warmup = 3;

    @Option(names = "--hidden", paramLabel = "W", description = "GCN hidden width (default: ${DEFAULT-VALUE}).")
    int hidden = 16;

    @Option(names = "--dropout", paramLabel = "P", description = "Dropout of the timed runs (default: ${DEFAULT-VALUE}).")
    double dropout = 0.5;

    @Option(names = "--what", paramLabel = "time|bytes", description = "time (1 rank) or bytes (2+ ranks); default: time with 1 rank, bytes with more.")
    String what;

    @Option(names = "--nodes", paramLabel = "N", description = "Synthetic graph: nodes (default: TrainGnn's, 150000).")
    Long nodes;

    @Option(names = "--avg-degree", paramLabel = "D", description = "Synthetic graph: mean degree (default: TrainGnn's, 10).")
    Double avgDegree;

    @Option(names = "--features", paramLabel = "F", description = "Synthetic graph: feature size (default: TrainGnn's, 64).")
    Integer features;

    @Option(names = "--classes", paramLabel = "C", description = "Synthetic graph: classes (default: TrainGnn's, 8).")
    Integer classes;

    @Option(names = "--node-order", paramLabel = "O", split = ",",
            description = "Epoch time: node orders of the partition file, each timed with the mn4j variants (none, rcm; default: none).")
    List<String> orders = List.of("none");

    @Option(names = "--no-plain", description = "Epoch time: time the mn4j variants only (each plain variant holds the graph once more).")
    boolean noPlain;

    @Option(names = "--csv", paramLabel = "FILE",
            description = "CSV output (default: gnn-epoch-benchmark.csv, or gnn-oneshot-bytes.csv for bytes).")
    Path csv;

    public static void main(String[] args) {
        JvmSetup.limitNativeMemory();
        JvmSetup.quietLibraryLogs();
        Cli.main(new GnnEpochBenchmark(), args);
    }

    @Override
    public Integer call() {
        Communicator.run(comm -> {
            boolean time = what != null ? what.equals("time") : comm.size() == 1;
            if (time) {
                if (comm.size() != 1) {
                    throw new IllegalArgumentException("the epoch-time comparison is a one-rank measurement: run with -np 1");
                }
                timing(comm);
            } else {
                bytes(comm);
            }
        });
        return 0;
    }

    // ---------------------------------------------------------------------------------------------
    // Epoch time

    private void timing(Communicator comm) throws IOException {
        PrintStream out = System.out;
        List<String[]> rows = new ArrayList<>();
        out.printf(Locale.ROOT, "GnnEpochBenchmark: 2-layer GCN (hidden %d, dropout %s, Adam lr 0.01, wd 5e-4), %d warm-up + %d timed epochs "
                + "per variant, interleaved; %d LibTorch threads; OPENBLAS_CORETYPE=%s%n", hidden, dropout, warmup, epochs, torch.get_num_threads(),
                System.getenv().getOrDefault("OPENBLAS_CORETYPE", "(unset)"));
        for (String d : data) {
            GraphOptions source = graphSource(d);
            List<Path> dirs = new ArrayList<>();
            List<Variant> variants = new ArrayList<>();
            String description;
            try (Graph g = source.load()) {
                description = source.describe(g);
                for (String o : orders) {
                    dirs.add(Files.createTempDirectory("mn4j-gnn-bench-"));
                    PartitionWriter.write(dirs.get(dirs.size() - 1), g, new int[(int) g.numNodes()], 1, "whole", 0, NodeOrder.byName(o));
                }
                if (!noPlain) {
                    variants.add(new PlainGcnEpoch("plain embedding_bag", g, hidden, false, false, dropout));
                    variants.add(new PlainGcnEpoch("plain sparse_csr", g, hidden, true, false, dropout));
                    variants.add(new PlainGcnEpoch("plain embedding_bag, torch.dropout", g, hidden, false, true, dropout));
                }
            }
            List<PartitionData> parts = new ArrayList<>();
            try {
                for (int i = 0; i < orders.size(); i++) {
                    parts.add(PartitionReader.load(comm, dirs.get(i)));
                    // The first order's variants keep their old names; the others say their order.
                    String suffix = i == 0 ? "" : ", " + orders.get(i) + " order";
                    variants.add(2 * i, new Mn4j("mn4j SAR" + suffix, comm, parts.get(i), AggregationMode.SAR, hidden, dropout));
                    variants.add(2 * i + 1, new Mn4j("mn4j ONE_SHOT" + suffix, comm, parts.get(i), AggregationMode.ONE_SHOT, hidden, dropout));
                }
                int plainAt = 2 * orders.size();
                out.println();
                out.println(description);
                out.println(sameMath(comm, parts.get(0), dirs.get(0)));
                for (Variant v : variants) {
                    for (int i = 0; i < warmup; i++) {
                        v.timedEpoch();
                    }
                }
                for (int i = 0; i < epochs; i++) {
                    for (Variant v : variants) {
                        double[] t = v.timedEpoch();
                        v.wall.add(t[0]);
                        v.cpu.add(t[1]);
                    }
                }
                double plainWall = noPlain ? Double.NaN : Math.min(median(variants.get(plainAt).wall), median(variants.get(plainAt + 1).wall));
                double plainCpu = noPlain ? Double.NaN : Math.min(median(variants.get(plainAt).cpu), median(variants.get(plainAt + 1).cpu));
                out.printf(Locale.ROOT, "  %-36s %12s %12s %10s %10s%n", "variant", "wall ms", "cpu ms", "wall/plain", "cpu/plain");
                for (Variant v : variants) {
                    double w = median(v.wall);
                    double c = median(v.cpu);
                    String rw = v.name.startsWith("mn4j") ? String.format(Locale.ROOT, "%.3f", w / plainWall) : "";
                    String rc = v.name.startsWith("mn4j") ? String.format(Locale.ROOT, "%.3f", c / plainCpu) : "";
                    out.printf(Locale.ROOT, "  %-36s %12.1f %12.1f %10s %10s%n", v.name, w * 1e3, c * 1e3, rw, rc);
                    rows.add(new String[] {source.label(), v.name, fmt(w * 1e3), fmt(c * 1e3), fmt(quantile(v.wall, 0.1) * 1e3),
                        fmt(quantile(v.wall, 0.9) * 1e3), rw, rc});
                }
                printOrderSpeedups(variants, out);
            } finally {
                for (Variant v : variants) {
                    v.close();
                }
                parts.forEach(PartitionData::close);
                for (Path dir : dirs) {
                    deleteRecursively(dir);
                }
            }
        }
        Path file = csv != null ? csv : Path.of("gnn-epoch-benchmark.csv");
        writeCsv(file, "data,variant,median_wall_ms,median_cpu_ms,p10_wall_ms,p90_wall_ms,wall_ratio_to_plain,cpu_ratio_to_plain", rows);
        out.println();
        out.println("CSV: " + file.toAbsolutePath());
    }

    /** Each mn4j variant in another node order against the same mode in the first order: the ratio of median epoch times. */
    private void printOrderSpeedups(List<Variant> variants, PrintStream out) {
        for (int i = 1; i < orders.size(); i++) {
            for (int m = 0; m < 2; m++) {
                Variant base = variants.get(m), v = variants.get(2 * i + m);
                out.printf(Locale.ROOT, "  %s: %.3fx the epochs per second of %s (wall, medians), %.3fx by CPU time%n", v.name,
                        median(base.wall) / median(v.wall), base.name, median(base.cpu) / median(v.cpu));
            }
        }
    }

    /** The graph named {@code d}, with this program's synthetic-graph options. */
    private GraphOptions graphSource(String d) {
        GraphOptions source = new GraphOptions();
        source.data = d;
        if (nodes != null) source.nodes = nodes;
        if (avgDegree != null) source.avgDegree = avgDegree;
        if (features != null) source.features = features;
        if (classes != null) source.classes = classes;
        return source;
    }

    /**
     * First-epoch loss of mn4j and of the plain embedding_bag model from the same parameters with
     * dropout off: they compute the same function, so the numbers must agree (to float rounding).
     */
    private String sameMath(Communicator comm, PartitionData part, Path dir) throws IOException {
        GnnRun.Config c = new GnnRun.Config(GnnModel.Kind.GCN, AggregationMode.SAR, hidden, 2, 1, 0.0, 0.01, 5e-4, 11);
        try (GnnRun run = GnnRun.start(comm, part, c); Graph whole = wholeGraph(dir, part);
                PlainGcnEpoch plain = new PlainGcnEpoch("check", whole, hidden, false, false, 0)) {
            plain.copyParameters(run.model());
            double a = run.epoch().trainLoss();
            double b = plain.epoch();
            return String.format(Locale.ROOT, "  same function: first-epoch loss without dropout from the same parameters, mn4j %.7f, plain %.7f",
                    a, b);
        }
    }

    /** The one-partition directory as a graph again, its nodes numbered by new id (the original ids in order none). */
    private static Graph wholeGraph(Path dir, PartitionData p) {
        try (PointerScope s = new PointerScope()) {
            return Graph.builder(Csr.of(p.numLocalNodes(), p.numLocalNodes(), p.rowptr(), p.col(), p.edgeWeight()))
                    .features(p.features()).labels(p.labels()).masks(p.trainMask(), p.valMask(), p.testMask())
                    .numClasses(p.metadata().numClasses()).build();
        }
    }

    /** A way to train the model, timed per epoch. */
    abstract static class Variant implements AutoCloseable {
        final String name;
        final List<Double> wall = new ArrayList<>();
        final List<Double> cpu = new ArrayList<>();

        Variant(String name) {
            this.name = name;
        }

        abstract void runEpoch();

        /** {wall seconds, process CPU seconds} of one epoch. */
        double[] timedEpoch() {
            long c0 = cpuNanos();
            long t0 = System.nanoTime();
            runEpoch();
            long t1 = System.nanoTime();
            long c1 = cpuNanos();
            return new double[] {(t1 - t0) / 1e9, (c1 - c0) / 1e9};
        }

        @Override
        public void close() {
        }
    }

    private static final class Mn4j extends Variant {
        final GnnRun run;

        Mn4j(String name, Communicator comm, PartitionData part, AggregationMode mode, int hidden, double dropout) {
            super(name);
            this.run = GnnRun.start(comm, part, new GnnRun.Config(GnnModel.Kind.GCN, mode, hidden, 2, 1, dropout, 0.01, 5e-4, 1));
        }

        @Override
        void runEpoch() {
            run.epoch();
        }

        @Override
        public void close() {
            run.close();
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Bytes per layer in one-shot mode

    private void bytes(Communicator comm) throws IOException {
        PrintStream out = comm.rank() == 0 ? System.out : new PrintStream(PrintStream.nullOutputStream());
        List<String[]> rows = new ArrayList<>();
        out.printf("GnnEpochBenchmark: bytes sent in ONE_SHOT mode by a 2-layer GCN (hidden %d) over %d ranks%n", hidden, comm.size());
        for (String d : data) {
            GraphOptions source = graphSource(d);
            // Rank 0 writes the partitions, every rank reads its own (one machine, or a shared file system).
            Path where = Path.of(comm.bcastObj(comm.rank() == 0 ? Files.createTempDirectory("mn4j-gnn-bytes-").toString() : null, 0));
            String method = Partitions.defaultPartitioner();
            String description = Agreement.agree(comm, "partitioning " + d, () -> {
                if (comm.rank() != 0) {
                    return null;
                }
                try (Graph g = source.load()) {
                    PartitionWriter.partitionAndWrite(where, g, Partitioners.byName(method), comm.size(), 1);
                    return source.describe(g);
                }
            });
            try (PartitionData part = PartitionReader.load(comm, where);
                    GnnRun run = GnnRun.start(comm, part, new GnnRun.Config(GnnModel.Kind.GCN, AggregationMode.ONE_SHOT, hidden, 2, 1, 0.5,
                            0.01, 5e-4, 1))) {
                PartitionMetadata meta = part.metadata();
                GraphShardManager graph = run.graph();
                long rows0 = 0;
                for (int q = 0; q < comm.size(); q++) {
                    rows0 += graph.rowsSentTo(q);
                }
                long managerRows = comm.allreduceObj(rows0, Long::sum);
                out.println();
                out.printf("%s; %s partitions: edge cut %d, communication volume %d rows (metadata), %d rows (shard managers)%n", description,
                        meta.method(), meta.edgeCut(), meta.commVolume(), managerRows);
                out.printf(Locale.ROOT, "  %-28s %8s %14s %14s %7s%n", "exchange", "width", "bytes sent", "expected", "equal");
                long[] widths = {hidden, meta.numClasses()};
                long layerSum = 0;
                for (int l = 0; l < widths.length; l++) {
                    long width = widths[l];
                    long sent = exchangedBytes(graph, () -> {
                        try (PointerScope s = new PointerScope(); NoGradGuard g = new NoGradGuard()) {
                            graph.aggregate(torch.ones(part.numLocalNodes(), width), EdgeNorm.GCN);
                        }
                    });
                    long total = comm.allreduceObj(sent, Long::sum);
                    long expected = meta.commVolume() * widths[l] * 4;
                    layerSum += expected;
                    out.printf(Locale.ROOT, "  %-28s %8d %14d %14d %7s%n", "layer " + (l + 1) + " forward", widths[l], total, expected,
                            total == expected);
                    rows.add(new String[] {source.label(), String.valueOf(comm.size()), "layer " + (l + 1) + " forward", String.valueOf(widths[l]),
                        String.valueOf(total), String.valueOf(expected), String.valueOf(meta.commVolume()), String.valueOf(managerRows),
                        String.valueOf(total == expected)});
                }
                long epochSent = comm.allreduceObj(exchangedBytes(graph, run::epoch), Long::sum);
                out.printf(Locale.ROOT, "  %-28s %8s %14d %14d %7s%n", "training epoch (fwd+bwd+eval)", "", epochSent, 3 * layerSum,
                        epochSent == 3 * layerSum);
                rows.add(new String[] {source.label(), String.valueOf(comm.size()), "training epoch", "", String.valueOf(epochSent),
                    String.valueOf(3 * layerSum), String.valueOf(meta.commVolume()), String.valueOf(managerRows),
                    String.valueOf(epochSent == 3 * layerSum)});
            } finally {
                comm.barrier();
                if (comm.rank() == 0) {
                    deleteRecursively(where);
                }
            }
        }
        if (comm.rank() == 0) {
            Path file = csv != null ? csv : Path.of("gnn-oneshot-bytes.csv");
            writeCsv(file, "data,ranks,exchange,width,bytes_sent_all_ranks,expected_bytes,comm_volume_rows,manager_rows,equal", rows);
            out.println();
            out.println("CSV: " + file.toAbsolutePath());
        }
    }

    /**
     * Payload bytes this rank's shard manager sent while {@code body} ran: its forward's
     * {@code alltoall} and its backward's gradients, which go back point to point ({@code isend}).
     */
    private static long exchangedBytes(GraphShardManager graph, Runnable body) {
        long before = bytesSent(graph);
        body.run();
        return bytesSent(graph) - before;
    }

    private static long bytesSent(GraphShardManager graph) {
        var ops = graph.communicator().stats().snapshot();
        long sent = 0;
        for (String name : new String[] {"alltoall", "isend"}) {
            var op = ops.get(name);
            sent += op == null ? 0 : op.bytesSent();
        }
        return sent;
    }

    // ---------------------------------------------------------------------------------------------

    private static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    private static double median(List<Double> xs) {
        return quantile(xs, 0.5);
    }

    private static double quantile(List<Double> xs, double q) {
        double[] s = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        if (s.length == 0) {
            return Double.NaN;
        }
        double pos = q * (s.length - 1);
        int lo = (int) Math.floor(pos);
        int hi = (int) Math.ceil(pos);
        return s[lo] + (s[hi] - s[lo]) * (pos - lo);
    }

    private static String fmt(double v) {
        return String.format(Locale.ROOT, "%.2f", v);
    }

    private static void writeCsv(Path file, String header, List<String[]> rows) throws IOException {
        StringBuilder sb = new StringBuilder(header).append('\n');
        for (String[] r : rows) {
            sb.append(String.join(",", Arrays.stream(r).map(v -> v.contains(",") ? "\"" + v + "\"" : v).toList())).append('\n');
        }
        if (file.getParent() != null) {
            Files.createDirectories(file.getParent());
        }
        Files.writeString(file, sb.toString(), StandardCharsets.UTF_8);
    }

    private static void deleteRecursively(Path dir) throws IOException {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}
