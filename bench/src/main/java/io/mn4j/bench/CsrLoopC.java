package io.mn4j.bench;

import io.mn4j.gnn.io.Npy;
import io.mn4j.gnn.kernel.CsrAggregation;
import io.mn4j.tensor.Scopes;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * The plain C CSR loop of {@code bench/c/csragg.c} on the same graph as the Java side: writes the
 * matrix and its transpose as {@code .npy} files once, then launches the compiled program for one
 * timed repetition at a time, so that its runs interleave with the Java methods' repetitions.
 * Also builds the input patterns the C program uses, so that checksums can be compared.
 */
final class CsrLoopC {
    /** One timed C operation: {@code forward}, {@code backward} or {@code copy}. */
    record Timing(String op, double seconds, double checksum) {
    }

    private final Path program;
    private final Path dir;

    /** Writes {@code agg}'s matrix and transpose into {@code dir} for {@code program}. */
    CsrLoopC(Path program, Path dir, CsrAggregation agg) throws IOException {
        this.program = program;
        this.dir = dir;
        Files.createDirectories(dir);
        Npy.write(dir.resolve("rowptr.npy"), agg.matrix().rowptr());
        Npy.write(dir.resolve("col.npy"), agg.matrix().col());
        Npy.write(dir.resolve("t_rowptr.npy"), agg.transpose().matrix().rowptr());
        Npy.write(dir.resolve("t_col.npy"), agg.transpose().matrix().col());
    }

    /** One warm-up and one timed repetition of forward, backward and copy at width {@code features}. */
    List<Timing> run(int features, int threads) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(program.toString(), "--dir", dir.toString(), "--features", Integer.toString(features), "--threads",
                Integer.toString(threads), "--reps", "1", "--warmup", "1").redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(10, TimeUnit.MINUTES) || p.exitValue() != 0) {
            p.destroy();
            throw new IOException(program + " failed (exit " + (p.isAlive() ? "none" : p.exitValue()) + ") on " + dir);
        }
        List<Timing> t = new ArrayList<>();
        for (String line : out.strip().split("\n")) {
            String[] f = line.split(",");
            t.add(new Timing(f[0], Double.parseDouble(f[1]), Double.parseDouble(f[2])));
        }
        return t;
    }

    /**
     * The C program's input pattern, float32 [rows, f]: {@code ((a i + b j) mod 1000) / 1000 + shift},
     * computed as it does (exact integers, one float division), so that sums agree to rounding.
     */
    static Tensor pattern(long rows, long f, long a, long b, double shift) {
        PointerScope outer = PointerScope.getInnerScope();
        try (PointerScope s = new PointerScope()) {
            Tensor i = torch.arange(new Scalar(rows)).mul(new Scalar(a)).unsqueeze(1);
            Tensor j = torch.arange(new Scalar(f)).mul(new Scalar(b)).unsqueeze(0);
            Tensor v = i.add(j).remainder(new Scalar(1000)).to(ScalarType.Float).div(new Scalar(1000.0));
            return Scopes.escape(s, outer, shift == 0 ? v.contiguous() : v.add(new Scalar((float) shift)).contiguous());
        }
    }

    /** The sum of all entries, in double, as the C program's checksum. */
    static double checksum(Tensor t) {
        try (PointerScope s = new PointerScope()) {
            return t.to(ScalarType.Double).sum().item_double();
        }
    }
}
