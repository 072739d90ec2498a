package io.mn4j.bench;

import io.mn4j.examples.gnn.JvmSetup;
import io.mn4j.examples.support.Cli;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.graph.SyntheticGraphs;
import io.mn4j.gnn.kernel.CsrAggregation;
import io.mn4j.gnn.partition.NodeOrder;
import io.mn4j.gnn.partition.PartitionBuilder;
import io.mn4j.gnn.partition.PartitionData;
import io.mn4j.tensor.Scopes;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.BoolOptional;
import org.bytedeco.pytorch.T_TensorTensorTensorTensor_T;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorArrayRefOptional;
import org.bytedeco.pytorch.TensorOptional;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.bytedeco.pytorch.global.torch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine;

/**
 * Sum-aggregation throughput, forward and backward (gradient with respect to the node features),
 * of several ways to compute {@code out = A · x} on one synthetic graph, measured in one run:
 *
 * <ul>
 *   <li>{@code mn4j-csr}: {@link CsrAggregation#apply} ({@code embedding_bag} forward, the same
 *       kernel on the transposed CSR in backward);
 *   <li>{@code c-csr}: a plain C CSR loop ({@code bench/c/csragg.c}, {@code -O3 -fopenmp}, the same
 *       thread count) on the same matrix and its transpose, launched between the Java repetitions
 *       ({@code --c-kernel}); it also times a plain copy ({@code c-copy});
 *   <li>{@code copy}: {@code dst.copy_(x)} of the whole feature matrix, the memory's streaming speed;
 *   <li>{@code sparse_csr-matmul}: LibTorch's {@code sparse_csr_tensor(...).matmul(x)} with autograd;
 *   <li>{@code index_select+index_add}: {@code zeros.index_add(0, dst, x.index_select(0, src))} with
 *       autograd (materialises one row per edge);
 *   <li>{@code embedding_bag-autograd}: {@code embedding_bag} with LibTorch's own backward, to show
 *       what the transposed-CSR backward saves.
 * </ul>
 *
 * <p>The graph is a planted-partition graph ({@link SyntheticGraphs}), one per degree, and every
 * width is measured on it; with {@code --node-order none,rcm} also in a reverse Cuthill–McKee
 * order ({@link NodeOrder}, as {@link PartitionBuilder} writes partitions). The features are the C
 * program's deterministic pattern, so that its checksums can be compared with the kernel's.
 * Throughput counts {@code 2 * edges * features} flops and {@code edges * features * 4} bytes of
 * gathered rows per direction; a copy counts the bytes of the matrix it copies. Repetitions go
 * round-robin over orders and methods; every Java result is checked against the kernel's own value
 * by row sums, C's by its total. Prints a table and writes a CSV (and with {@code --png} a plot).
 *
 * <p>Memory: {@code index_select+index_add} holds one row per edge (16M x 64 floats at the default
 * size, 11 GB resident): it is not in the default methods. The default methods hold about five
 * [nodes, features] float matrices, and the C program five of its own while it runs.
 */
@Command(name = "AggregationBenchmark", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Sum-aggregation throughput (forward and backward) of mn4j's CSR kernel against a plain C loop, a copy and "
                + "LibTorch's alternatives, on one synthetic graph per degree; prints a table and writes a CSV.", ""},
        footer = {"", "Example (bench/aggregation.sh compiles the C loop and runs the sweeps of docs/measurements.md):",
            "  bench/run AggregationBenchmark --nodes 1000000 --degree 16 --features 64 --threads 2 --reps 3 \\",
            "      --methods mn4j-csr,copy,c-csr --c-kernel bench/results/work/csragg --node-order none,rcm"})
public final class AggregationBenchmark implements Callable<Integer> {
    /** Method names, in table order. */
    public static final List<String> METHODS = List.of("mn4j-csr", "c-csr", "copy", "sparse_csr-matmul", "index_select+index_add",
            "embedding_bag-autograd");

    @Spec
    CommandSpec spec;

    @Option(names = "--nodes", paramLabel = "N", description = "Nodes of the planted-partition graph (default: ${DEFAULT-VALUE}).")
    long nodes = 1_000_000;

    @Option(names = "--degree", paramLabel = "D", split = ",", description = "Average degrees, one graph each (default: 16).")
    List<Double> degrees = List.of(16.0);

    @Option(names = "--features", paramLabel = "F", split = ",", description = "Feature widths, float32 (default: 64).")
    List<Integer> widths = List.of(64);

    @Option(names = "--threads", paramLabel = "T", description = "LibTorch and OpenMP threads (default: ${DEFAULT-VALUE}).")
    int threads = 2;

    @Option(names = "--reps", paramLabel = "R", description = "Timed repetitions per method (default: ${DEFAULT-VALUE}).")
    int reps = 5;

    @Option(names = "--warmup", paramLabel = "W", description = "Untimed repetitions first (default: ${DEFAULT-VALUE}).")
    int warmup = 1;

    @Option(names = "--seed", paramLabel = "S", description = "Seed of the graph (default: ${DEFAULT-VALUE}).")
    long seed = 1;

    @Option(names = "--csv", paramLabel = "FILE", description = "CSV output file (default: ${DEFAULT-VALUE}).")
    Path csv = Path.of("aggregation-benchmark.csv");

    @Option(names = "--png", paramLabel = "FILE", description = "Also plot gathered GB/s against width and degree (AggregationPlot).")
    Path png;

    @Option(names = "--methods", paramLabel = "M", split = ",", description = "Methods to measure, of ${COMPLETION-CANDIDATES} "
            + "(default: mn4j-csr,copy,sparse_csr-matmul,embedding_bag-autograd; c-csr needs --c-kernel).", completionCandidates = MethodNames.class)
    List<String> methods = List.of("mn4j-csr", "copy", "sparse_csr-matmul", "embedding_bag-autograd");

    @Option(names = "--node-order", paramLabel = "O", split = ",", description = "Node orders to measure, of none, rcm (default: none).")
    List<String> orders = List.of("none");

    @Option(names = "--c-kernel", paramLabel = "PROGRAM", description = "The compiled bench/c/csragg.c, for method c-csr.")
    Path cKernel;

    @Option(names = "--work", paramLabel = "DIR", description = "Where the C loop's graph files go (default: a temporary directory).")
    Path work;

    /** The method names, for --help. */
    static final class MethodNames implements Iterable<String> {
        @Override
        public Iterator<String> iterator() {
            return METHODS.iterator();
        }
    }

    /**
     * One measured method, node order and direction ({@code forward}, {@code backward} or
     * {@code copy}); {@code check} is the largest row-sum difference from the kernel's own result
     * (C: the relative difference of the total).
     */
    public record Result(double degree, int features, String order, String method, String direction, long nodes, long edges, int threads,
            double medianSeconds, double minSeconds, double check) {

        /** {@code 2 * edges * features / median time}, in GFLOP/s (0 for a copy). */
        public double gflops() { return direction.equals("copy") ? 0 : 2.0 * edges * features / medianSeconds / 1e9; }

        /** Gathered rows per second, {@code edges * features * 4 / median time}, or a copy's bytes per second, in GB/s. */
        public double gbPerSecond() { return (double) (direction.equals("copy") ? nodes : edges) * features * 4 / medianSeconds / 1e9; }
    }

    public static void main(String[] args) {
        JvmSetup.quietLibraryLogs();
        Cli.main(new AggregationBenchmark(), args);
    }

    @Override
    public Integer call() throws IOException, InterruptedException {
        for (String m : methods) {
            if (!METHODS.contains(m)) {
                throw new CommandLine.ParameterException(spec.commandLine(), "unknown method '" + m + "'; known: " + String.join(", ", METHODS));
            }
        }
        orders.forEach(NodeOrder::byName);
        if (methods.contains("c-csr") && (cKernel == null || !Files.isExecutable(cKernel))) {
            throw new CommandLine.ParameterException(spec.commandLine(), "c-csr needs --c-kernel, the compiled bench/c/csragg.c");
        }
        if (reps < 1 || threads < 1 || nodes < 1 || warmup < 0 || widths.stream().anyMatch(f -> f < 1)) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--nodes, --features, --threads and --reps must be positive, --warmup not negative");
        }
        PrintWriter out = spec.commandLine().getOut();
        torch.set_num_threads(threads);
        out.printf(Locale.ROOT, "aggregation benchmark: %d nodes, degrees %s, widths %s, orders %s, float32, %d threads (OPENBLAS_CORETYPE=%s)%n",
                nodes, degrees, widths, orders, torch.get_num_threads(), System.getenv().getOrDefault("OPENBLAS_CORETYPE", "unset"));
        Path dir = work != null ? work : Files.createTempDirectory("mn4j-aggregation-");
        List<Result> results = new ArrayList<>();
        for (double d : degrees) {
            results.addAll(runDegree(d, dir, out));
        }
        printTable(results, out);
        writeCsv(csv, results);
        out.println("wrote " + csv.toAbsolutePath());
        if (png != null) {
            AggregationPlot.plot(results, png);
            out.println("wrote " + png.toAbsolutePath());
        }
        out.flush();
        return 0;
    }

    /** The graph of degree {@code d} in every order asked for, measured at every width. */
    private List<Result> runDegree(double d, Path dir, PrintWriter out) throws IOException, InterruptedException {
        long t0 = System.nanoTime();
        List<PartitionData> graphs = new ArrayList<>();
        List<CsrAggregation> aggs = new ArrayList<>();
        List<CsrLoopC> cs = new ArrayList<>();
        try {
            try (Graph g = SyntheticGraphs.plantedPartition(nodes, d, 10, 0, seed)) {
                out.printf(Locale.ROOT, "graph: %d nodes, %d edges, average degree %.1f, generated in %.1f s%n", g.numNodes(), g.numEdges(), d,
                        (System.nanoTime() - t0) / 1e9);
                for (String o : orders) {
                    long t1 = System.nanoTime();
                    // One partition holding every node: the matrix exactly as a partition file has it.
                    graphs.add(new PartitionBuilder(g, new int[(int) g.numNodes()], 1, "whole", 0, NodeOrder.byName(o)).part(0));
                    aggs.add(CsrAggregation.of(graphs.get(graphs.size() - 1).adjacency()));
                    aggs.get(aggs.size() - 1).transpose();
                    out.printf(Locale.ROOT, "  order %s: built in %.1f s%n", o, (System.nanoTime() - t1) / 1e9);
                }
            }
            for (int i = 0; i < orders.size() && methods.contains("c-csr"); i++) {
                cs.add(new CsrLoopC(cKernel, dir.resolve("degree-" + d + "-" + orders.get(i)), aggs.get(i)));
            }
            List<Result> results = new ArrayList<>();
            for (int f : widths) {
                results.addAll(runWidth(d, f, aggs, cs, out));
            }
            return results;
        } finally {
            aggs.forEach(CsrAggregation::close);
            graphs.forEach(PartitionData::close);
        }
    }

    /** All methods and orders at width {@code f}, repetitions round-robin. */
    private List<Result> runWidth(double d, int f, List<CsrAggregation> aggs, List<CsrLoopC> cs, PrintWriter out)
            throws IOException, InterruptedException {
        long n = aggs.get(0).numRows(), e = aggs.get(0).nnz();
        Map<String, List<Double>> times = new LinkedHashMap<>();
        Map<String, Double> checks = new HashMap<>();
        try (PointerScope scope = new PointerScope()) {
            Tensor x = CsrLoopC.pattern(n, f, 31, 7, 0);
            Tensor gOut = CsrLoopC.pattern(n, f, 17, 13, -0.5);
            Tensor dst = torch.empty_like(x);
            double xSum = CsrLoopC.checksum(x);
            // Reference values from our kernel without autograd: row sums for Java, totals for C.
            Tensor[] yRef = new Tensor[aggs.size()], gRef = new Tensor[aggs.size()];
            double[] yTot = new double[aggs.size()], gTot = new double[aggs.size()];
            for (int i = 0; i < aggs.size(); i++) {
                // Only the sums stay: the full results would hold two more matrices per order.
                try (PointerScope inner = new PointerScope()) {
                    Tensor y = aggs.get(i).forward(x), g = aggs.get(i).transposeForward(gOut);
                    yRef[i] = Scopes.escape(inner, scope, y.sum(1));
                    gRef[i] = Scopes.escape(inner, scope, g.sum(1));
                    yTot[i] = CsrLoopC.checksum(y);
                    gTot[i] = CsrLoopC.checksum(g);
                }
            }
            for (int r = -warmup; r < reps; r++) {
                for (int i = 0; i < aggs.size(); i++) {
                    String o = orders.get(i);
                    for (String m : methods) {
                        if (m.equals("copy") && i == 0) {
                            long a = System.nanoTime();
                            dst.copy_(x);
                            double t = (System.nanoTime() - a) / 1e9;
                            record(times, checks, r, "-|copy|copy", t, relative(CsrLoopC.checksum(dst), xSum));
                        } else if (m.equals("c-csr") && r >= 0) {
                            for (CsrLoopC.Timing t : cs.get(i).run(f, threads)) {
                                boolean copy = t.op().equals("copy");
                                double want = copy ? xSum : t.op().equals("forward") ? yTot[i] : gTot[i];
                                String key = copy ? "-|c-copy|copy" : o + "|c-csr|" + t.op();
                                record(times, checks, r, key, t.seconds(), relative(t.checksum(), want));
                            }
                        } else if (!m.equals("copy") && !m.equals("c-csr")) {
                            javaMethod(m, aggs.get(i), gOut, x, yRef[i], gRef[i], r, o, times, checks);
                        }
                    }
                }
                out.printf(Locale.ROOT, "  degree %.0f, width %d: %s %d done%n", d, f, r < 0 ? "warm-up" : "repetition", r < 0 ? r + warmup + 1 : r + 1);
            }
        }
        List<Result> results = new ArrayList<>();
        for (Map.Entry<String, List<Double>> t : times.entrySet()) {
            String[] k = t.getKey().split("\\|");
            double[] v = t.getValue().stream().mapToDouble(Double::doubleValue).toArray();
            Arrays.sort(v);
            results.add(new Result(d, f, k[0], k[1], k[2], n, e, threads, median(v), v[0], checks.get(t.getKey())));
        }
        return results;
    }

    /** One repetition of a LibTorch method, forward then backward, timed and checked by row sums. */
    private static void javaMethod(String m, CsrAggregation agg, Tensor gOut, Tensor x, Tensor yRef, Tensor gRef, int r, String o,
            Map<String, List<Double>> times, Map<String, Double> checks) {
        try (PointerScope s = new PointerScope()) {
            Tensor csr = !m.equals("sparse_csr-matmul") ? null : torch.sparse_csr_tensor(agg.matrix().rowptr(), agg.matrix().col(),
                    torch.ones(new long[] {agg.nnz()}, new TensorOptions(ScalarType.Float)), new long[] {agg.numRows(), agg.numCols()},
                    new TensorOptions(ScalarType.Float));
            Tensor xi = x.detach().requires_grad_(true);
            long a = System.nanoTime();
            Tensor y = forward(m, agg, csr, xi);
            long b = System.nanoTime();
            y.backward(gOut, new BoolOptional(), false, new TensorArrayRefOptional());
            long c = System.nanoTime();
            record(times, checks, r, o + "|" + m + "|forward", (b - a) / 1e9, y.detach().sum(1).sub(yRef).abs().max().item_double());
            record(times, checks, r, o + "|" + m + "|backward", (c - b) / 1e9, xi.grad().sum(1).sub(gRef).abs().max().item_double());
        }
    }

    private static void record(Map<String, List<Double>> times, Map<String, Double> checks, int r, String key, double seconds, double check) {
        if (r < 0) return;
        times.computeIfAbsent(key, k -> new ArrayList<>()).add(seconds);
        checks.merge(key, check, Math::max);
    }

    private static double relative(double got, double want) {
        return Math.abs(got - want) / Math.max(Math.abs(want), 1e-30);
    }

    private static Tensor forward(String method, CsrAggregation agg, Tensor csr, Tensor x) {
        switch (method) {
            case "mn4j-csr":
                return agg.apply(x);
            case "sparse_csr-matmul":
                return csr.matmul(x);
            case "index_select+index_add": {
                // Drop our handles on the per-edge rows at once: only autograd may keep them.
                PointerScope outer = PointerScope.getInnerScope();
                try (PointerScope s = new PointerScope()) {
                    Tensor zeros = torch.zeros(new long[] {agg.numRows(), x.size(1)}, new TensorOptions(ScalarType.Float));
                    return Scopes.escape(s, outer, zeros.index_add(0, agg.matrix().rowIndex(), x.index_select(0, agg.matrix().col())));
                }
            }
            case "embedding_bag-autograd": {
                PointerScope outer = PointerScope.getInnerScope();
                try (PointerScope s = new PointerScope()) {
                    T_TensorTensorTensorTensor_T r = torch.embedding_bag(x, agg.matrix().col(), agg.matrix().rowptr(), false, 0, false, new TensorOptional(), true);
                    return Scopes.escape(s, outer, new Tensor(r.get0()));
                }
            }
            default:
                throw new IllegalArgumentException(method);
        }
    }

    private static double median(double[] sorted) {
        int k = sorted.length;
        return k % 2 == 1 ? sorted[k / 2] : (sorted[k / 2 - 1] + sorted[k / 2]) / 2;
    }

    /**
     * The ratios of a result within its graph and width: {its GB/s over its implementation's copy
     * (C's for c-csr, LibTorch's otherwise), C's median time over its own (same order and
     * direction), order none's median time over its own (same method and direction)}; NaN where
     * the other was not measured.
     */
    static double[] ratios(Result r, List<Result> all) {
        String copy = r.method().startsWith("c-") ? "c-copy" : "copy";
        double ofCopy = r.gbPerSecond() / find(all, r, "-", copy, "copy").map(Result::gbPerSecond).orElse(Double.NaN);
        double vsC = find(all, r, r.order(), "c-csr", r.direction()).map(Result::medianSeconds).orElse(Double.NaN) / r.medianSeconds();
        double vsNone = find(all, r, "none", r.method(), r.direction()).map(Result::medianSeconds).orElse(Double.NaN) / r.medianSeconds();
        return new double[] {ofCopy, r.direction().equals("copy") ? Double.NaN : vsC, vsNone};
    }

    private static Optional<Result> find(List<Result> all, Result like, String order, String method, String direction) {
        return all.stream().filter(q -> q.degree() == like.degree() && q.features() == like.features() && q.order().equals(order)
                && q.method().equals(method) && q.direction().equals(direction)).findFirst();
    }

    private static void printTable(List<Result> results, PrintWriter out) {
        out.println();
        out.printf(Locale.ROOT, "%6s %5s %-5s %-24s %-9s %9s %9s %8s %8s %8s %8s %9s%n", "degree", "width", "order", "method", "direction",
                "median s", "min s", "GB/s", "of copy", "C/this", "none/this", "check");
        for (Result r : results) {
            double[] q = ratios(r, results);
            out.printf(Locale.ROOT, "%6.1f %5d %-5s %-24s %-9s %9.4f %9.4f %8.2f %8.3f %8.3f %8.3f %9.2e%n", r.degree(), r.features(), r.order(),
                    r.method(), r.direction(), r.medianSeconds(), r.minSeconds(), r.gbPerSecond(), q[0], q[1], q[2], r.check());
        }
        out.println("GB/s: gathered rows (edges x width x 4 B) per second, a copy's bytes per second; of copy: against the copy of the same "
                + "implementation (C or LibTorch) in this run; C/this: c-csr's median time over this one's; none/this: the speed-up of the "
                + "node order; check: largest row-sum difference from mn4j-csr (C: relative difference of the total).");
    }

    /** Writes the results as CSV (one line per degree, width, order, method and direction). */
    public static void writeCsv(Path file, List<Result> results) throws IOException {
        StringBuilder sb = new StringBuilder("degree,features,order,method,direction,nodes,edges,threads,median_s,min_s,gflops,gb_per_s,"
                + "of_copy,c_over_this,none_over_this,check\n");
        for (Result r : results) {
            double[] q = ratios(r, results);
            sb.append(String.format(Locale.ROOT, "%.1f,%d,%s,%s,%s,%d,%d,%d,%.6f,%.6f,%.4f,%.4f,%.4f,%.4f,%.4f,%.3e%n", r.degree(), r.features(),
                    r.order(), r.method(), r.direction(), r.nodes(), r.edges(), r.threads(), r.medianSeconds(), r.minSeconds(), r.gflops(),
                    r.gbPerSecond(), q[0], q[1], q[2], r.check()));
        }
        if (file.getParent() != null) Files.createDirectories(file.getParent());
        Files.writeString(file, sb.toString());
    }
}
