package io.mn4j.bench;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.ReduceOp;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine;

/**
 * The Java side of mn4j's communication benchmark: the {@link Communicator} on float32 LibTorch
 * tensors, measured exactly as {@code bench/c/commbench.c} measures plain MPI in C (same sizes,
 * iteration counts, timing and statistic), so that the two give Java/C ratios.
 *
 * <p>Operations ({@code bytes} is the per-rank buffer size; bandwidth = bytes / seconds):
 * <ul>
 *   <li>{@code pingpong}: blocking {@code send} / {@code recv} between ranks 0 and 1; one-way time
 *       is half the round trip. {@code recv} returns a new tensor each time, so the allocation of
 *       the received tensor is part of the cost (as it is for a user of {@code recv}).</li>
 *   <li>{@code pingpong_into}: the same with {@code recvInto} a preallocated tensor (no
 *       allocation; rank 0 receives into the tensor it sent, as the C program uses one buffer per
 *       rank); measured to separate allocation from transport.</li>
 *   <li>{@code pingpong_mpijava}: the same with Open MPI's Java bindings directly (blocking
 *       {@code send}/{@code recv} of a direct {@link ByteBuffer} over a preallocated tensor, no
 *       header); the floor that the Communicator's own overhead adds to.</li>
 *   <li>{@code allgather}: each rank contributes {@code bytes}; the result is a new buffer.</li>
 *   <li>{@code alltoall}: each rank sends {@code bytes} in total, {@code bytes/P} to each rank;
 *       the results are new tensors.</li>
 *   <li>{@code allgather_into}, {@code alltoall_into}: the same with {@code allgatherInto} and
 *       {@code alltoallInto} a preallocated tensor, as the C program receives into one buffer.</li>
 *   <li>{@code allreduce}: {@code allreduce(SUM)} of {@code bytes} of float32; the result is a new
 *       tensor (the input is never modified).</li>
 *   <li>{@code allreduce_into}: the same with {@code allreduceInto} a preallocated tensor, as the
 *       C program reduces into a separate receive buffer.</li>
 *   <li>{@code allgather_mpijava}, {@code alltoall_mpijava}, {@code allreduce_mpijava}: the C
 *       program's calls made through Open MPI's Java bindings on direct buffers over the same
 *       preallocated tensors, no mn4j: in the same launch as the Communicator's rows, they
 *       separate what mn4j adds from what the JVM process and the launch do.</li>
 * </ul>
 * Inputs and the preallocated outputs are allocated and filled outside the timed loops, once per
 * operation at the largest size and at a 2 MiB boundary, the smaller sizes using prefixes, as
 * the C program's buffers are. Each operation runs inside a
 * {@link PointerScope}, so results and temporaries are freed right after it (inside the timed
 * loop, as a program that does not leak would do). Method: per op, a global warm-up at the
 * smallest size and, for collectives, a second one at 1 MiB; then per size: barrier, warm-up
 * operations, then {@code repeats} times {barrier; time {@code iters} operations; per-op time =
 * elapsed / iters, for collectives the maximum over ranks}, with iters = clamp(16 MiB / bytes,
 * 2, 100) so that repeats are short and some escape interference from other processes; the
 * reported figure is the minimum (default) or the median of the repeats. The first warm-up result
 * of each size is checked for correct values, so a broken transport cannot produce a fast number.
 *
 * <p>Output: CSV lines {@code impl,op,ranks,bytes,seconds_per_op,bandwidth} (impl {@code java},
 * bandwidth in bytes/s) from rank 0, on stdout or appended to {@code --out}.
 */
@Command(name = "CommBenchmark", mixinStandardHelpOptions = true,
        description = "Benchmarks mn4j's Communicator (ping-pong, allgather, alltoall, allreduce); "
                + "run under mpirun, compare with bench/c/commbench.c (bench/comm.sh does both).")
public final class CommBenchmark implements Callable<Integer> {
    // Keep these in step with commbench.c.
    static final long PP_MIN = 8;
    static final long PP_MAX = 64L << 20;
    static final long COLL_MIN = 64L << 10;
    static final long COLL_MAX = 16L << 20;
    static final long BYTES_PER_REPEAT = 16L << 20;
    static final long MIN_ITERS = 2;
    static final long MAX_ITERS = 100;
    /** Untimed operations before the first size, so that the JIT has compiled the hot paths. */
    static final long PP_GLOBAL_WARMUP = 5000;
    static final long COLL_GLOBAL_WARMUP = 20000;
    /**
     * Untimed collectives at {@link #COLL_LARGE_WARMUP_BYTES}: received tensors of 256 KiB and
     * more come from the Communicator's own buffers, a path the smallest size never takes; without this its
     * first size ran with that path still interpreted (2 ranks, 512 KiB: 52 us against 30 warm).
     */
    static final long COLL_LARGE_WARMUP = 1000;
    static final long COLL_LARGE_WARMUP_BYTES = 1L << 20;

    /** Which statistic of the repeats is reported. */
    enum Stat { median, min }

    @Option(names = "--ops", split = ",", defaultValue = "pingpong,pingpong_into,allgather,allgather_into,alltoall,alltoall_into,allreduce,allreduce_into",
            description = "Operations to run (default: ${DEFAULT-VALUE}).")
    List<String> ops;

    @Option(names = "--quick", description = "A few sizes and fewer iterations, to check that it works.")
    boolean quick;

    @Option(names = "--stat", defaultValue = "min", description = "min or median of the repeats (default: ${DEFAULT-VALUE}).")
    Stat stat;

    @Option(names = "--repeats", defaultValue = "21", description = "Timed repeats per size (default: ${DEFAULT-VALUE}).")
    int repeats;

    @Option(names = "--out", description = "Append CSV lines to this file instead of printing them.")
    Path out;

    @Option(names = "--load-only", description = "Only load LibTorch's native libraries and exit "
            + "(run once before mpirun so that ranks do not unpack JavaCPP's cache concurrently).")
    boolean loadOnly;

    private Communicator comm;
    private PrintStream sink;

    /** Entry point; see the class documentation and {@code --help}. */
    public static void main(String[] args) {
        CommBenchmark bench = new CommBenchmark();
        CommandLine cl = new CommandLine(bench);
        int code;
        try {
            cl.parseArgs(args);
            if (cl.isUsageHelpRequested()) {
                cl.usage(System.out);
                return;
            }
            if (cl.isVersionHelpRequested()) {
                cl.printVersionHelp(System.out);
                return;
            }
            code = bench.call();
        } catch (CommandLine.ParameterException e) {
            System.err.println(e.getMessage());
            cl.usage(System.err);
            code = 2;
        }
        System.exit(code);
    }

    @Override
    public Integer call() {
        if (loadOnly) {
            Loader.load(torch.class);
            System.out.println("LibTorch native libraries loaded");
            return 0;
        }
        if (quick) {
            repeats = Math.min(repeats, 3);
        }
        Communicator.run(world -> {
            comm = world;
            sink = openSink();
            try {
                for (String op : ops) {
                    switch (op) {
                        case "pingpong", "pingpong_into", "pingpong_mpijava" -> {
                            if (comm.size() < 2) {
                                if (comm.rank() == 0) {
                                    System.err.println("CommBenchmark: " + op + " needs 2 ranks, skipped");
                                }
                            } else {
                                if (op.equals("pingpong_mpijava")) {
                                    pingpongMpiJava();
                                } else {
                                    pingpong(op.equals("pingpong_into"));
                                }
                            }
                        }
                        case "allgather", "allgather_into", "allgather_mpijava", "alltoall", "alltoall_into",
                                "alltoall_mpijava", "allreduce", "allreduce_into", "allreduce_mpijava" -> collective(op);
                        default -> throw new IllegalArgumentException("unknown op " + op
                                + " (pingpong, pingpong_into, pingpong_mpijava, allgather, allgather_into, allgather_mpijava, alltoall,"
                                + " alltoall_into, alltoall_mpijava, allreduce, allreduce_into, allreduce_mpijava)");
                    }
                }
            } finally {
                if (sink != null && sink != System.out) {
                    sink.close();
                }
            }
        });
        return 0;
    }

    private PrintStream openSink() throws IOException {
        if (comm.rank() != 0) {
            return null;
        }
        if (out == null) {
            return System.out;
        }
        return new PrintStream(Files.newOutputStream(out, StandardOpenOption.CREATE, StandardOpenOption.APPEND),
                true, StandardCharsets.UTF_8);
    }

    long itersFor(long bytes) {
        long n = Math.max(MIN_ITERS, Math.min(MAX_ITERS, BYTES_PER_REPEAT / bytes));
        return quick ? Math.max(2, n / 8) : n;
    }

    static long warmupFor(long iters) {
        return Math.max(2, iters / 4);
    }

    double summarize(double[] t) {
        double[] s = t.clone();
        Arrays.sort(s);
        if (stat == Stat.min) {
            return s[0];
        }
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    }

    private void emit(String op, long bytes, double seconds) {
        if (comm.rank() == 0) {
            sink.printf(Locale.ROOT, "java,%s,%d,%d,%.9e,%.6e%n", op, comm.size(), bytes, seconds, bytes / seconds);
            sink.flush();
        }
    }

    /** Buffers start at a huge-page boundary, as the C program's (2 MiB on x86-64). */
    static final long BUFFER_ALIGNMENT = 2L << 20;

    /**
     * A float32 vector of {@code bytes} bytes starting at a {@link #BUFFER_ALIGNMENT} boundary,
     * every element {@code value} (every page touched): a view into a slightly larger tensor,
     * which it keeps alive. Both sides of the benchmark place their buffers so, once per operation
     * at the largest size, and use prefixes for the smaller sizes: where a buffer starts relative
     * to huge pages moved C's 1 MiB allgather by 28 % and its 16 MiB all-to-all by up to 2x
     * between launches, more than anything mn4j does.
     */
    private static Tensor filled(long bytes, float value) {
        long pad = BUFFER_ALIGNMENT / Float.BYTES;
        Tensor big = torch.empty(new long[] {bytes / Float.BYTES + pad}, new TensorOptions(torch.ScalarType.Float), null);
        long address = big.data_ptr().address();
        long skip = (((address + BUFFER_ALIGNMENT - 1) & -BUFFER_ALIGNMENT) - address) / Float.BYTES;
        Tensor t = big.narrow(0, skip, bytes / Float.BYTES);
        t.fill_(new Scalar(value));
        return t;
    }

    /** The first {@code bytes} bytes of a float32 vector. */
    private static Tensor prefix(Tensor t, long bytes) {
        return t.narrow(0, 0, bytes / Float.BYTES);
    }

    private static float first(Tensor t) {
        return new FloatPointer(t.data_ptr()).get(0);
    }

    private static float last(Tensor t) {
        return new FloatPointer(t.data_ptr()).get(t.numel() - 1);
    }

    private static void expect(String what, Tensor t, float value) {
        float a = first(t);
        float b = last(t);
        if (a != value || b != value) {
            throw new IllegalStateException("CommBenchmark: wrong result of " + what + ": expected "
                    + value + ", got first " + a + ", last " + b);
        }
    }

    private boolean pingpongSize(long bytes) {
        return !quick || bytes == 8 || bytes == 1024 || bytes == 1L << 20 || bytes == 8L << 20;
    }

    private void pingpong(boolean into) {
        String op = into ? "pingpong_into" : "pingpong";
        int rank = comm.rank();
        double[] t = new double[repeats];
        long global = quick ? PP_GLOBAL_WARMUP / 10 : PP_GLOBAL_WARMUP;
        long maxBytes = quick ? PP_MAX / 8 : PP_MAX;
        Tensor xAll = filled(maxBytes, rank + 1);
        Tensor yAll = filled(maxBytes, 0);
        for (long bytes = PP_MIN; bytes <= PP_MAX; bytes *= 2) {
            if (!pingpongSize(bytes)) {
                continue;
            }
            long iters = itersFor(bytes);
            Tensor x = prefix(xAll, bytes);
            Tensor y = prefix(yAll, bytes);
            if (rank == 1) {
                y.fill_(new Scalar(0)); // what rank 1 checks must be new
            }
            for (int r = -1; r < repeats; r++) {
                long n = r < 0 ? warmupFor(iters) + global : iters;
                global = 0;
                comm.barrier();
                long t0 = System.nanoTime();
                for (long i = 0; i < n; i++) {
                    try (PointerScope scope = new PointerScope()) {
                        if (rank == 0) {
                            comm.send(x, 1, 0);
                            // Into the tensor just sent: one buffer per rank, as in the C program.
                            Tensor back = into ? comm.recvInto(x, 1, 0) : comm.recv(1, 0);
                            if (r < 0 && i == 0 && !into) {
                                expect(op + " of " + bytes + " B", back, 1f);
                            }
                        } else if (rank == 1) {
                            Tensor got = into ? comm.recvInto(y, 0, 0) : comm.recv(0, 0);
                            if (r < 0 && i == 0) {
                                expect(op + " of " + bytes + " B at rank 1", got, 1f); // y was 0s
                            }
                            comm.send(got, 0, 0);
                        }
                    }
                }
                long elapsed = System.nanoTime() - t0;
                if (r >= 0) {
                    t[r] = elapsed * 1e-9 / (2.0 * n);
                }
            }
            x.close();
            y.close();
            emit(op, bytes, summarize(t));
        }
        xAll.close();
        yAll.close();
    }

    /** Ping-pong on the raw Java bindings: separates the bindings' cost from the Communicator's. */
    private void pingpongMpiJava() throws MPIException {
        int rank = comm.rank();
        Intracomm world = MPI.COMM_WORLD;
        double[] t = new double[repeats];
        long global = quick ? PP_GLOBAL_WARMUP / 10 : PP_GLOBAL_WARMUP;
        long maxBytes = quick ? PP_MAX / 8 : PP_MAX;
        Tensor xAll = filled(maxBytes, rank + 1);
        for (long bytes = PP_MIN; bytes <= PP_MAX; bytes *= 2) {
            if (!pingpongSize(bytes)) {
                continue;
            }
            long iters = itersFor(bytes);
            Tensor x = prefix(xAll, bytes);
            ByteBuffer buf = direct(x);
            int count = (int) bytes;
            for (int r = -1; r < repeats; r++) {
                long n = r < 0 ? warmupFor(iters) + global : iters;
                global = 0;
                comm.barrier();
                long t0 = System.nanoTime();
                for (long i = 0; i < n; i++) {
                    if (rank == 0) {
                        world.send(buf, count, MPI.BYTE, 1, 0);
                        world.recv(buf, count, MPI.BYTE, 1, 0);
                    } else if (rank == 1) {
                        world.recv(buf, count, MPI.BYTE, 0, 0);
                        world.send(buf, count, MPI.BYTE, 0, 0);
                    }
                }
                long elapsed = System.nanoTime() - t0;
                if (r >= 0) {
                    t[r] = elapsed * 1e-9 / (2.0 * n);
                }
            }
            if (rank == 1) {
                expect("pingpong_mpijava of " + bytes + " B", x, 1f); // rank 0's values came back
            }
            Reference.reachabilityFence(buf);
            x.close();
            emit("pingpong_mpijava", bytes, summarize(t));
        }
        xAll.close();
    }

    /** A direct buffer over a contiguous CPU tensor's memory (the tensor must outlive it). */
    private static ByteBuffer direct(Tensor t) {
        return new BytePointer(t.data_ptr()).capacity(t.nbytes()).asByteBuffer().order(ByteOrder.nativeOrder());
    }

    private void collective(String op) throws MPIException {
        int size = comm.size();
        int rank = comm.rank();
        long maxBytes = quick ? 1L << 20 : COLL_MAX;
        double[] t = new double[repeats];
        long global = quick ? COLL_GLOBAL_WARMUP / 20 : COLL_GLOBAL_WARMUP;
        long large = quick ? COLL_LARGE_WARMUP / 20 : COLL_LARGE_WARMUP;
        // Once, at the largest size, as the C program's send and receive buffers; the Into
        // variants and the bindings write into these, the allocating operations make new tensors.
        Tensor xAll = filled(maxBytes, rank + 1);
        Tensor gatheredAll = filled(maxBytes * size, 0);
        Tensor exchangedAll = filled(maxBytes, 0);
        Tensor reducedAll = filled(maxBytes, 0);
        for (long bytes = COLL_MIN; bytes <= maxBytes; bytes *= 2) {
            if (quick && bytes != COLL_MIN && bytes != maxBytes) {
                continue;
            }
            long iters = itersFor(bytes);
            Tensor x = prefix(xAll, bytes);
            // The allocating alltoall sends x's blocks, as MPI_Alltoall does.
            long blockElements = bytes / size / Float.BYTES;
            List<Tensor> parts = new ArrayList<>();
            for (int p = 0; p < size; p++) {
                parts.add(x.narrow(0, p * blockElements, blockElements));
            }
            Tensor gathered = prefix(gatheredAll, bytes * size);
            Tensor exchanged = prefix(exchangedAll, bytes);
            Tensor reduced = prefix(reducedAll, bytes);
            gathered.fill_(new Scalar(0)); // what the checks read must be new
            exchanged.fill_(new Scalar(0));
            reduced.fill_(new Scalar(0));
            ByteBuffer xBuf = direct(x);
            ByteBuffer gatheredBuf = direct(gathered);
            ByteBuffer exchangedBuf = direct(exchanged);
            ByteBuffer reducedBuf = direct(reduced);
            int count = (int) bytes;
            int block = (int) (bytes / size);
            for (int r = -1; r < repeats; r++) {
                long n = r < 0 ? warmupFor(iters) + global + (bytes == COLL_LARGE_WARMUP_BYTES ? large : 0) : iters;
                global = 0;
                comm.barrier();
                long t0 = System.nanoTime();
                for (long i = 0; i < n; i++) {
                    try (PointerScope scope = new PointerScope()) {
                        switch (op) {
                            case "allgather" -> {
                                List<Tensor> all = comm.allgather(x);
                                if (r < 0 && i == 0) {
                                    for (int p = 0; p < size; p++) {
                                        expect(op + " of " + bytes + " B from rank " + p, all.get(p), p + 1);
                                    }
                                }
                            }
                            case "allgather_into" -> {
                                comm.allgatherInto(x, gathered);
                                if (r < 0 && i == 0) {
                                    expectBlocks(op, bytes, gathered, size);
                                }
                            }
                            case "alltoall_into" -> {
                                comm.alltoallInto(x, exchanged);
                                if (r < 0 && i == 0) {
                                    expectBlocks(op, bytes, exchanged, size);
                                }
                            }
                            case "alltoall" -> {
                                List<Tensor> got = comm.alltoall(parts);
                                if (r < 0 && i == 0) {
                                    for (int p = 0; p < size; p++) {
                                        expect(op + " of " + bytes + " B from rank " + p, got.get(p), p + 1);
                                    }
                                }
                            }
                            case "allgather_mpijava" -> {
                                MPI.COMM_WORLD.allGather(xBuf, count, MPI.BYTE, gatheredBuf, count, MPI.BYTE);
                                if (r < 0 && i == 0) {
                                    expectBlocks(op, bytes, gathered, size);
                                }
                            }
                            case "alltoall_mpijava" -> {
                                MPI.COMM_WORLD.allToAll(xBuf, block, MPI.BYTE, exchangedBuf, block, MPI.BYTE);
                                if (r < 0 && i == 0) {
                                    expectBlocks(op, bytes, exchanged, size);
                                }
                            }
                            case "allreduce_mpijava" -> {
                                MPI.COMM_WORLD.allReduce(xBuf, reducedBuf, count / Float.BYTES, MPI.FLOAT, MPI.SUM);
                                if (r < 0 && i == 0) {
                                    expect(op + " of " + bytes + " B", reduced, size * (size + 1) / 2f);
                                }
                            }
                            case "allreduce_into" -> {
                                comm.allreduceInto(x, reduced, ReduceOp.SUM);
                                if (r < 0 && i == 0) {
                                    expect(op + " of " + bytes + " B", reduced, size * (size + 1) / 2f);
                                }
                            }
                            default -> {
                                Tensor sum = comm.allreduce(x, ReduceOp.SUM);
                                if (r < 0 && i == 0) {
                                    expect(op + " of " + bytes + " B", sum, size * (size + 1) / 2f);
                                }
                            }
                        }
                    }
                }
                double mine = (System.nanoTime() - t0) * 1e-9 / n;
                if (r >= 0) {
                    t[r] = slowest(mine);
                }
            }
            x.close();
            parts.forEach(Tensor::close);
            gathered.close();
            exchanged.close();
            reduced.close();
            emit(op, bytes, summarize(t));
        }
        xAll.close();
        gatheredAll.close();
        exchangedAll.close();
        reducedAll.close();
    }

    /** Checks that block p of {@code out} (one of {@code blocks} equal ones) holds rank p's values. */
    private void expectBlocks(String op, long bytes, Tensor out, int blocks) {
        long n = out.numel() / blocks;
        for (int p = 0; p < blocks; p++) {
            expect(op + " of " + bytes + " B from rank " + p, out.narrow(0, p * n, n), p + 1);
        }
    }

    /** The maximum of a value over all ranks (outside the timed region). */
    private double slowest(double mine) {
        try (PointerScope scope = new PointerScope()) {
            Tensor v = torch.empty(new long[] {1}, new TensorOptions(torch.ScalarType.Double), null);
            v.fill_(new Scalar(mine));
            Tensor m = comm.allreduce(v, ReduceOp.MAX);
            return m.item_double();
        }
    }
}
