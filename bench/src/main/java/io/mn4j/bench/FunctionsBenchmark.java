package io.mn4j.bench;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.SendHandle;
import io.mn4j.functions.Functions;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.BoolOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorArrayRefOptional;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Forward+backward cost of the differentiable {@code send}/{@code recv} pair and of
 * {@code allgather}, against the raw {@link Communicator} calls they perform, on float32 tensors.
 *
 * <ul>
 *   <li>send/recv (ranks 0 and 1; other ranks idle): function = {@code send} on rank 0 and
 *       {@code recv} on rank 1, then backward on both (rank 1 backpropagates a given gradient,
 *       rank 0 its delegate). Raw = rank 0 {@code isend(x)} + {@code recv(grad)}, rank 1
 *       {@code recv(x)} + {@code isend(grad)}.</li>
 *   <li>allgather (all ranks): function = {@code Functions.allgather} + backward with given
 *       output gradients. Raw = {@code Communicator.allgather} + {@code Communicator.alltoall} of
 *       the gradients (the exchange of a reduce-scatter); "raw+sum" also adds the received
 *       gradients in place, the arithmetic a reduce-scatter cannot avoid.</li>
 * </ul>
 *
 * Each iteration starts with a barrier; its time is the maximum over ranks. Function and raw
 * iterations alternate so that drift affects both alike; the median is reported. Run with
 * {@code mpirun -np 2} (one rank per core); the table goes to stdout (rank 0), the CSV to a file.
 */
@Command(name = "functions-benchmark", mixinStandardHelpOptions = true,
        description = "Overhead of mn4j's differentiable send/recv and allgather over the raw Communicator calls.")
public final class FunctionsBenchmark implements Callable<Integer> {
    @Option(names = "--sizes-mib", split = ",", defaultValue = "1,16", description = "Tensor sizes in MiB (default: ${DEFAULT-VALUE}).")
    private List<Integer> sizesMib;

    @Option(names = "--iterations", defaultValue = "30", description = "Timed iterations per variant (default: ${DEFAULT-VALUE}).")
    private int iterations;

    @Option(names = "--warmup", defaultValue = "5", description = "Untimed iterations per variant and size (default: ${DEFAULT-VALUE}).")
    private int warmup;

    @Option(names = "--jit-warmup", defaultValue = "3000", description = "Untimed iterations per variant on 1 KiB"
            + " tensors before the first size, so that the JVM has compiled the Java side (default: ${DEFAULT-VALUE}).")
    private int jitWarmup;

    @Option(names = "--csv", defaultValue = "functions-benchmark.csv", description = "CSV output file (default: ${DEFAULT-VALUE}).")
    private Path csv;

    private Communicator comm;

    /** One timed variant: runs one iteration. */
    @FunctionalInterface
    private interface Step {
        void run() throws Exception;
    }

    /** The variants of one operation, and what resets the state between iterations (not timed). */
    private record Variants(Step fn, Step raw, Step rawPlus, Step reset) {
    }

    /** Arguments of Tensor.backward, made once: the harness's own objects must not be timed. */
    private static final BoolOptional NO_RETAIN = new BoolOptional();
    private static final TensorArrayRefOptional ALL_INPUTS =
            new TensorArrayRefOptional();

    /** Median and minimum milliseconds of the function, the raw calls, and raw calls + sum. */
    private record Row(String op, int mib, double[] fn, double[] raw, double[] rawPlus) {
    }

    public static void main(String[] args) {
        MpiCommand.main(args, world -> {
            FunctionsBenchmark b = new FunctionsBenchmark();
            b.comm = world;
            return b;
        });
    }

    @Override
    public Integer call() throws Exception {
        if (jitWarmup > 0) {
            long n = 256;
            if (comm.size() >= 2) {
                time(sendRecv(n), jitWarmup, 0);
            }
            time(allgather(n), jitWarmup, 0);
        }
        List<Row> rows = new ArrayList<>();
        for (int mib : sizesMib) {
            long n = mib * (1L << 20) / 4;
            if (comm.size() >= 2) {
                double[][] t = time(sendRecv(n), warmup, iterations);
                rows.add(new Row("send/recv", mib, t[0], t[1], t[2]));
            }
            double[][] t = time(allgather(n), warmup, iterations);
            rows.add(new Row("allgather", mib, t[0], t[1], t[2]));
        }
        Functions.flush(comm);
        comm.barrier();
        if (comm.rank() == 0) {
            report(rows);
        }
        return 0;
    }

    private Variants sendRecv(long n) {
        int rank = comm.rank();
        Tensor x = torch.randn(new long[] {n}, new TensorOptions(torch.ScalarType.Float)).requires_grad_(true);
        Tensor grad = torch.randn(new long[] {n}, new TensorOptions(torch.ScalarType.Float));
        Step fn = () -> {
            if (rank == 0) {
                Tensor phi = Functions.send(x, comm, 1, 1);
                phi.backward();
            } else if (rank == 1) {
                Tensor z = Functions.recv(comm, 0, 1);
                z.backward(grad, NO_RETAIN, false, ALL_INPUTS);
            }
        };
        Step raw = () -> {
            if (rank == 0) {
                SendHandle h = comm.isend(x.detach(), 1, 2);
                comm.recv(1, 3);
                h.waitFor();
            } else if (rank == 1) {
                comm.recv(0, 2);
                comm.isend(grad, 0, 3).waitFor();
            }
        };
        return new Variants(fn, raw, null, () -> x.mutable_grad().put(new Tensor()));
    }

    private Variants allgather(long n) {
        int size = comm.size();
        Tensor x = torch.randn(new long[] {n}, new TensorOptions(torch.ScalarType.Float)).requires_grad_(true);
        List<Tensor> grads = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            grads.add(torch.randn(new long[] {n}, new TensorOptions(torch.ScalarType.Float)));
        }
        TensorVector gradVector = new TensorVector(grads.toArray(new Tensor[0]));
        TensorVector noInputs = new TensorVector();
        Step fn = () -> {
            List<Tensor> ys = Functions.allgather(comm, x);
            torch.backward(new TensorVector(ys.toArray(new Tensor[0])), gradVector, NO_RETAIN, false, noInputs);
        };
        Step raw = () -> {
            comm.allgather(x.detach());
            comm.alltoall(grads);
        };
        Step rawPlus = () -> {
            comm.allgather(x.detach());
            List<Tensor> parts = comm.alltoall(grads);
            Tensor acc = parts.get(0);
            for (int r = 1; r < parts.size(); r++) {
                acc.add_(parts.get(r));
            }
        };
        return new Variants(fn, raw, rawPlus, () -> x.mutable_grad().put(new Tensor()));
    }

    /**
     * {median, minimum} milliseconds of each variant (NaNs for a missing one), the variants
     * alternating iteration by iteration. The minimum is the better estimate of the intrinsic cost
     * on a machine shared with other work; the median shows the typical cost there.
     */
    private double[][] time(Variants variants, int warmup, int iterations) throws Exception {
        List<Step> steps = new ArrayList<>(List.of(variants.fn, variants.raw));
        if (variants.rawPlus != null) {
            steps.add(variants.rawPlus);
        }
        double[][] times = new double[steps.size()][Math.max(iterations, 1)];
        for (int it = -warmup; it < iterations; it++) {
            for (int v = 0; v < steps.size(); v++) {
                comm.barrier();
                long t0 = System.nanoTime();
                try (PointerScope scope = new PointerScope()) {
                    steps.get(v).run();
                }
                double ms = (System.nanoTime() - t0) / 1e6;
                try (PointerScope scope = new PointerScope()) {
                    variants.reset.run();
                }
                double max;
                // Small tensors left to the garbage collector between the large ones fragment
                // the native heap (RSS grows without bound): free them at once.
                try (PointerScope scope = new PointerScope()) {
                    max = comm.allreduceObj(ms, Math::max);
                }
                if (it >= 0) {
                    times[v][it] = max;
                }
            }
        }
        double[][] out = new double[3][];
        for (int v = 0; v < 3; v++) {
            if (v >= steps.size()) {
                out[v] = new double[] {Double.NaN, Double.NaN};
                continue;
            }
            double[] s = times[v].clone();
            Arrays.sort(s);
            out[v] = new double[] {s[s.length / 2], s[0]};
        }
        return out;
    }

    private void report(List<Row> rows) throws IOException {
        String coretype = System.getenv().getOrDefault("OPENBLAS_CORETYPE", "(unset)");
        String load = Files.exists(Path.of("/proc/loadavg")) ? Files.readString(Path.of("/proc/loadavg")).trim() : "?";
        System.out.printf(Locale.ROOT, "mn4j functions benchmark: %d ranks, float32, %d iterations (after %d warm-up),"
                + " OPENBLAS_CORETYPE=%s, LibTorch threads=%d, load average %s%n", comm.size(), iterations, warmup,
                coretype, torch.get_num_threads(), load);
        System.out.println("overhead = function / raw - 1; raw+sum adds the in-place sum of the received gradients"
                + " that a reduce-scatter needs");
        System.out.printf(Locale.ROOT, "%-10s %4s | %9s %9s %9s %8s | %9s %9s %9s %8s%n", "op", "MiB",
                "fn med", "raw med", "+sum med", "ovh med", "fn min", "raw min", "+sum min", "ovh min");
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(csv, StandardCharsets.UTF_8))) {
            w.println("op,mib,ranks,statistic,function_ms,raw_ms,raw_plus_sum_ms,overhead_vs_raw_pct,"
                    + "overhead_vs_raw_plus_sum_pct");
            for (Row r : rows) {
                String[] cells = new String[2];
                for (int k = 0; k < 2; k++) {
                    double fn = r.fn[k];
                    double raw = r.raw[k];
                    double plus = r.rawPlus[k];
                    double over = 100 * (fn - raw) / raw;
                    double overPlus = 100 * (fn - plus) / plus;
                    cells[k] = String.format(Locale.ROOT, "%9.3f %9.3f %9s %7.1f%%", fn, raw,
                            Double.isNaN(plus) ? "-" : String.format(Locale.ROOT, "%.3f", plus), over);
                    w.printf(Locale.ROOT, "%s,%d,%d,%s,%.4f,%.4f,%s,%.2f,%s%n", r.op, r.mib, comm.size(),
                            k == 0 ? "median" : "min", fn, raw,
                            Double.isNaN(plus) ? "" : String.format(Locale.ROOT, "%.4f", plus), over,
                            Double.isNaN(overPlus) ? "" : String.format(Locale.ROOT, "%.2f", overPlus));
                }
                System.out.printf(Locale.ROOT, "%-10s %4d | %s | %s%n", r.op, r.mib, cells[0], cells[1]);
            }
        }
        System.out.println("CSV: " + csv.toAbsolutePath());
    }
}
