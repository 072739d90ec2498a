package io.mn4j.bench;

import io.mn4j.examples.gnn.JvmSetup;
import io.mn4j.examples.support.Cli;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.graph.SyntheticGraphs;
import io.mn4j.gnn.kernel.CsrAggregation;
import io.mn4j.tensor.Scopes;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
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
 *   <li>{@code sparse_csr-matmul}: LibTorch's {@code sparse_csr_tensor(...).matmul(x)} with autograd;
 *   <li>{@code index_select+index_add}: {@code zeros.index_add(0, dst, x.index_select(0, src))} with
 *       autograd (materialises one row per edge);
 *   <li>{@code embedding_bag-autograd}: {@code embedding_bag} with LibTorch's own backward, to show
 *       what the transposed-CSR backward saves.
 * </ul>
 *
 * <p>The graph is a planted-partition graph ({@link SyntheticGraphs}) with random float32
 * features. Throughput counts {@code 2 * edges * features} flops and {@code edges * features * 4}
 * bytes of gathered rows per direction. Prints a table and writes a CSV. Repetitions go
 * round-robin over the methods; each result is checked against the kernel's own value.
 *
 * <p>Memory: at the default size the run peaks near 11 GB resident, almost all of it
 * {@code index_select+index_add}'s per-edge rows (16M x 64 floats, forward and backward); leave
 * that method out with {@code --methods} on a shared machine. A single process; no MPI.
 */
@Command(name = "AggregationBenchmark", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Sum-aggregation throughput (forward and backward) of mn4j's CSR kernel against LibTorch's alternatives, "
                + "on one synthetic graph; prints a table and writes a CSV.", ""},
        footer = {"", "Example (the README's figures; index_select+index_add peaks at ~11 GB):",
            "  bench/run AggregationBenchmark --nodes 1000000 --degree 16 --features 64 --threads 2 --reps 3"})
public final class AggregationBenchmark implements Callable<Integer> {
    /** Method names, in table order. */
    public static final List<String> METHODS = List.of("mn4j-csr", "sparse_csr-matmul", "index_select+index_add", "embedding_bag-autograd");

    @Spec
    CommandSpec spec;

    @Option(names = "--nodes", paramLabel = "N", description = "Nodes of the planted-partition graph (default: ${DEFAULT-VALUE}).")
    long nodes = 1_000_000;

    @Option(names = "--degree", paramLabel = "D", description = "Average degree (default: ${DEFAULT-VALUE}).")
    double degree = 16;

    @Option(names = "--features", paramLabel = "F", description = "Feature columns, float32 (default: ${DEFAULT-VALUE}).")
    int features = 64;

    @Option(names = "--threads", paramLabel = "T", description = "LibTorch threads (default: ${DEFAULT-VALUE}).")
    int threads = 2;

    @Option(names = "--reps", paramLabel = "R", description = "Timed repetitions per method (default: ${DEFAULT-VALUE}).")
    int reps = 5;

    @Option(names = "--warmup", paramLabel = "W", description = "Untimed repetitions first (default: ${DEFAULT-VALUE}).")
    int warmup = 1;

    @Option(names = "--seed", paramLabel = "S", description = "Seed of the graph and the features (default: ${DEFAULT-VALUE}).")
    long seed = 1;

    @Option(names = "--csv", paramLabel = "FILE", description = "CSV output file (default: ${DEFAULT-VALUE}).")
    Path csv = Path.of("aggregation-benchmark.csv");

    @Option(names = "--methods", paramLabel = "M", split = ",", description = "Methods to measure, of ${COMPLETION-CANDIDATES} (default: all).",
            completionCandidates = MethodNames.class)
    List<String> methods = METHODS;

    /** The method names, for --help. */
    static final class MethodNames implements Iterable<String> {
        @Override
        public Iterator<String> iterator() {
            return METHODS.iterator();
        }
    }

    /** One measured method and direction. */
    public record Result(String method, String direction, long nodes, long edges, int features, int threads, double medianSeconds,
            double minSeconds, double maxAbsError) {

        /** {@code 2 * edges * features / median time}, in GFLOP/s. */
        public double gflops() { return 2.0 * edges * features / medianSeconds / 1e9; }

        /** Gathered rows per second: {@code edges * features * 4 bytes / median time}, in GB/s. */
        public double gbPerSecond() { return (double) edges * features * 4 / medianSeconds / 1e9; }
    }

    public static void main(String[] args) {
        JvmSetup.quietLibraryLogs();
        Cli.main(new AggregationBenchmark(), args);
    }

    @Override
    public Integer call() throws IOException {
        for (String m : methods) {
            if (!METHODS.contains(m)) {
                throw new CommandLine.ParameterException(spec.commandLine(), "unknown method '" + m + "'; known: " + String.join(", ", METHODS));
            }
        }
        if (reps < 1 || threads < 1 || features < 1 || nodes < 1 || warmup < 0) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--nodes, --features, --threads and --reps must be positive, --warmup not negative");
        }
        PrintWriter out = spec.commandLine().getOut();
        List<Result> results = run(out);
        writeCsv(csv, results);
        out.println("wrote " + csv.toAbsolutePath());
        out.flush();
        return 0;
    }

    /** Runs the benchmark with the options set, printing progress and the table to {@code out}. */
    List<Result> run(PrintWriter out) {
        torch.set_num_threads(threads);
        out.printf(Locale.ROOT, "aggregation benchmark: %d nodes, average degree %.1f, %d features, float32, %d LibTorch threads (OPENBLAS_CORETYPE=%s)%n",
                nodes, degree, features, torch.get_num_threads(), System.getenv().getOrDefault("OPENBLAS_CORETYPE", "unset"));
        List<Result> results = new ArrayList<>();
        long t0 = System.nanoTime();
        try (Graph g = SyntheticGraphs.plantedPartition(nodes, degree, 10, 0, seed); CsrAggregation agg = CsrAggregation.inEdges(g);
                PointerScope outer = new PointerScope()) {
            long n = g.numNodes(), e = g.numEdges();
            out.printf(Locale.ROOT, "graph: %d nodes, %d edges, generated in %.1f s%n", n, e, (System.nanoTime() - t0) / 1e9);
            torch.manual_seed(seed);
            Tensor x = torch.randn(new long[] {n, features}, new TensorOptions(ScalarType.Float));
            Tensor gOut = torch.randn(new long[] {n, features}, new TensorOptions(ScalarType.Float));
            Tensor dst = g.adjacency().rowIndex();
            Tensor csr = torch.sparse_csr_tensor(g.rowptr(), g.col(), torch.ones(new long[] {e}, new TensorOptions(ScalarType.Float)), new long[] {n, n},
                    new TensorOptions(ScalarType.Float));
            // Reference values from our kernel without autograd; every method is checked against them.
            Tensor yRef = agg.forward(x);
            Tensor gRef = agg.transposeForward(gOut);
            // Repetitions go round-robin over the methods, so a change in machine load during the
            // run affects all of them alike (the ratios are what this benchmark reports).
            int k = methods.size();
            double[][] fwd = new double[k][reps], bwd = new double[k][reps];
            double[] errF = new double[k], errB = new double[k];
            for (int r = -warmup; r < reps; r++) {
                for (int i = 0; i < k; i++) {
                    try (PointerScope s = new PointerScope()) {
                        Tensor xi = x.detach().requires_grad_(true);
                        long a = System.nanoTime();
                        Tensor y = forward(methods.get(i), agg, csr, dst, xi);
                        long b = System.nanoTime();
                        y.backward(gOut, new BoolOptional(), false, new TensorArrayRefOptional());
                        long d = System.nanoTime();
                        if (r >= 0) {
                            fwd[i][r] = (b - a) / 1e9;
                            bwd[i][r] = (d - b) / 1e9;
                        }
                        errF[i] = Math.max(errF[i], y.detach().sub(yRef).abs().max().item_double());
                        errB[i] = Math.max(errB[i], xi.grad().sub(gRef).abs().max().item_double());
                    }
                }
                out.printf(Locale.ROOT, "  %s %d done%n", r < 0 ? "warm-up" : "repetition", r < 0 ? r + warmup + 1 : r + 1);
            }
            for (int i = 0; i < k; i++) {
                results.add(result(methods.get(i), "forward", n, e, fwd[i], errF[i]));
                results.add(result(methods.get(i), "backward", n, e, bwd[i], errB[i]));
            }
        }
        printTable(results, out);
        return results;
    }

    private static Tensor forward(String method, CsrAggregation agg, Tensor csr, Tensor dst, Tensor x) {
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
                    return Scopes.escape(s, outer, zeros.index_add(0, dst, x.index_select(0, agg.matrix().col())));
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

    private Result result(String m, String dir, long n, long e, double[] t, double err) {
        double[] s = t.clone();
        Arrays.sort(s);
        return new Result(m, dir, n, e, features, threads, median(t), s[0], err);
    }

    private static double median(double[] t) {
        double[] s = t.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    private static void printTable(List<Result> results, PrintWriter out) {
        out.println();
        out.printf(Locale.ROOT, "%-24s %-9s %10s %10s %9s %9s %12s %10s%n", "method", "direction", "median s", "min s", "GFLOP/s", "GB/s", "vs sparse_csr", "max err");
        for (Result r : results) {
            double base = results.stream().filter(q -> q.method().equals("sparse_csr-matmul") && q.direction().equals(r.direction()))
                    .mapToDouble(Result::medianSeconds).findFirst().orElse(Double.NaN);
            out.printf(Locale.ROOT, "%-24s %-9s %10.4f %10.4f %9.2f %9.2f %11.2fx %10.2e%n", r.method(), r.direction(), r.medianSeconds(), r.minSeconds(),
                    r.gflops(), r.gbPerSecond(), base / r.medianSeconds(), r.maxAbsError());
        }
    }

    /** Writes the results as CSV (one line per method and direction). */
    public static void writeCsv(Path file, List<Result> results) throws IOException {
        StringBuilder sb = new StringBuilder("method,direction,nodes,edges,features,threads,median_s,min_s,gflops,gb_per_s,speedup_vs_sparse_csr,max_abs_error\n");
        for (Result r : results) {
            double base = results.stream().filter(q -> q.method().equals("sparse_csr-matmul") && q.direction().equals(r.direction()))
                    .mapToDouble(Result::medianSeconds).findFirst().orElse(Double.NaN);
            sb.append(String.format(Locale.ROOT, "%s,%s,%d,%d,%d,%d,%.6f,%.6f,%.4f,%.4f,%.4f,%.3e%n", r.method(), r.direction(), r.nodes(), r.edges(),
                    r.features(), r.threads(), r.medianSeconds(), r.minSeconds(), r.gflops(), r.gbPerSecond(), base / r.medianSeconds(), r.maxAbsError()));
        }
        if (file.getParent() != null) Files.createDirectories(file.getParent());
        Files.writeString(file, sb.toString());
    }
}
