package io.mn4j.mpitests.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.examples.Partition;
import io.mn4j.examples.Train;
import io.mn4j.examples.TrainDataParallel;
import io.mn4j.examples.TrainDualParallel;
import io.mn4j.examples.TrainEnsemble;
import io.mn4j.examples.TrainGnn;
import io.mn4j.mpitests.MpiLauncher;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * The example programs under mpirun on a reduced problem: the model-parallel {@code Train} gives
 * the same per-epoch losses with 1, 2 and 4 ranks; the other examples run and learn; bad inputs
 * end the job with a clear message instead of hanging.
 */
class ExamplesTest {
    /** A small, fast configuration: 1000 training and 300 test examples, a narrow MLP, 2 x 20 steps. */
    static final List<String> SMALL = List.of("--epochs", "2", "--train-examples", "1000", "--test-examples", "300",
            "--batch-size", "50", "--eval-batch-size", "100", "--hidden", "64,48,32", "--lr", "3e-3", "--schedule",
            "constant", "--seed", "3", "--no-progress", "--no-plot");

    static MpiLauncher.Result launch(int ranks, Class<?> main, Path out, List<String> extra) throws Exception {
        List<String> args = new ArrayList<>();
        for (int i = 0; i < SMALL.size(); i++) {
            String a = SMALL.get(i);
            boolean overridden = a.startsWith("--") && extra.contains(a);
            boolean takesValue = i + 1 < SMALL.size() && !SMALL.get(i + 1).startsWith("--");
            if (!overridden) {
                args.add(a);
                if (takesValue) {
                    args.add(SMALL.get(i + 1));
                }
            }
            if (takesValue) {
                i++;
            }
        }
        args.addAll(List.of("--out", out.toString()));
        args.addAll(extra);
        Files.createDirectories(out);
        return MpiLauncher.run(ranks, main.getName(), args, out, 180);
    }

    /** Rows of epochs.csv as numbers (header dropped). */
    static List<double[]> epochs(Path out) throws IOException {
        List<double[]> rows = new ArrayList<>();
        List<String> lines = Files.readAllLines(out.resolve("epochs.csv"));
        for (String line : lines.subList(1, lines.size())) {
            rows.add(Arrays.stream(line.split(",")).mapToDouble(Double::parseDouble).toArray());
        }
        return rows;
    }

    static void assertCompleted(MpiLauncher.Result r) {
        assertFalse(r.timedOut(), () -> "job hung:\n" + r.describe());
        assertEquals(0, r.exitCode(), () -> "job failed:\n" + r.describe());
    }

    @Test
    void modelParallelTrainMatchesOneRank(@TempDir(cleanup = CleanupMode.ON_SUCCESS) Path base) throws Exception {
        List<List<double[]>> runs = new ArrayList<>();
        for (int np : new int[] {1, 2, 4}) {
            Path out = base.resolve("np" + np);
            MpiLauncher.Result r = launch(np, Train.class, out, List.of());
            assertCompleted(r);
            assertTrue(r.output().contains("model parallel over " + np + " rank"), r::describe);
            runs.add(epochs(out));
        }
        List<double[]> one = runs.get(0);
        assertEquals(2, one.size());
        assertTrue(one.get(1)[1] < one.get(0)[1], "training loss must fall: " + one.get(0)[1] + " -> " + one.get(1)[1]);
        assertTrue(one.get(1)[4] > 0.4, "test accuracy after 2 small epochs should beat chance by far: " + one.get(1)[4]);
        for (int k = 1; k < runs.size(); k++) {
            for (int e = 0; e < one.size(); e++) {
                double[] a = one.get(e);
                double[] b = runs.get(k).get(e);
                String what = (k == 1 ? "2" : "4") + " ranks, epoch " + (e + 1);
                assertEquals(a[1], b[1], 1e-4, what + ": training loss");
                assertEquals(a[3], b[3], 1e-4, what + ": test loss");
                assertEquals(a[4], b[4], 1e-9, what + ": test accuracy");
            }
        }
    }

    @Test
    void otherExamplesRunAndLearn(@TempDir(cleanup = CleanupMode.ON_SUCCESS) Path base) throws Exception {
        record Run(Class<?> main, int ranks) {
        }
        for (Run run : List.of(new Run(TrainDataParallel.class, 2), new Run(TrainEnsemble.class, 2),
                new Run(TrainDualParallel.class, 4))) {
            Path out = base.resolve(run.main().getSimpleName());
            MpiLauncher.Result r = launch(run.ranks(), run.main(), out, List.of());
            assertCompleted(r);
            List<double[]> e = epochs(out);
            assertEquals(2, e.size(), r::describe);
            assertTrue(e.get(1)[4] > 0.3, run.main().getSimpleName() + " test accuracy " + e.get(1)[4] + "\n" + r.describe());
            assertTrue(e.get(1)[6] > 0, "throughput reported");
        }
        // two pairs (model parallel inside, data parallel across) do the same arithmetic as two
        // data-parallel ranks: same parts, same batches, same initial weights, averaged gradients
        List<double[]> dp = epochs(base.resolve(TrainDataParallel.class.getSimpleName()));
        List<double[]> dual = epochs(base.resolve(TrainDualParallel.class.getSimpleName()));
        for (int e = 0; e < dp.size(); e++) {
            assertEquals(dp.get(e)[1], dual.get(e)[1], 1e-4, "epoch " + (e + 1) + " training loss, dual vs data parallel");
            assertEquals(dp.get(e)[3], dual.get(e)[3], 1e-4, "epoch " + (e + 1) + " test loss, dual vs data parallel");
        }
    }

    @Test
    void badInputsEndTheJobWithAClearMessage(@TempDir(cleanup = CleanupMode.ON_SUCCESS) Path base) throws Exception {
        // no data where --data points
        Path empty = Files.createDirectories(base.resolve("empty"));
        MpiLauncher.Result missing = launch(2, Train.class, base.resolve("missing"), List.of("--data", empty.toString()));
        assertFalse(missing.timedOut(), missing::describe);
        assertNotEquals(0, missing.exitCode(), missing::describe);
        assertTrue(missing.output().contains("train-images-idx3-ubyte[.gz] not found"), missing::describe);

        // a truncated images file (the real labels, the images cut in the middle)
        Path cut = Files.createDirectories(base.resolve("cut"));
        Path real = Path.of("/usr/share/datasets/fashion-mnist");
        byte[] images;
        try (GZIPInputStream in = new GZIPInputStream(Files.newInputStream(real.resolve("train-images-idx3-ubyte.gz")))) {
            images = in.readNBytes(16 + 784 * 100);
        }
        Files.write(cut.resolve("train-images-idx3-ubyte"), images);
        for (String file : List.of("train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")) {
            Files.copy(real.resolve(file), cut.resolve(file));
        }
        MpiLauncher.Result truncated = launch(2, Train.class, base.resolve("truncated"), List.of("--data", cut.toString()));
        assertFalse(truncated.timedOut(), truncated::describe);
        assertNotEquals(0, truncated.exitCode(), truncated::describe);
        assertTrue(truncated.output().contains("is truncated") && truncated.output().contains("only 78400 bytes follow"),
                truncated::describe);

        // a batch larger than the (reduced) training set
        MpiLauncher.Result big = launch(2, Train.class, base.resolve("big"), List.of("--batch-size", "5000"));
        assertFalse(big.timedOut(), big::describe);
        assertNotEquals(0, big.exitCode(), big::describe);
        assertTrue(big.output().contains("batch size 5000 is larger than the data set (1000 examples)"), big::describe);
    }

    @Test
    void badOptionsAreOneLineAHintAndExitCodeTwo(@TempDir(cleanup = CleanupMode.ON_SUCCESS) Path base) throws Exception {
        Path empty = Files.createDirectories(base.resolve("empty"));
        List<List<String>> bad = List.of(List.of("--epochs", "-1"), List.of("--batch-size", "0"), List.of("--hidden", "0"),
                List.of("--data", empty.toString()), List.of("--epochs", "many"));
        List<String> named = List.of("--epochs must be at least 1, got -1", "--batch-size must be at least 1, got 0",
                "every --hidden width must be at least 1, got 0", "train-images-idx3-ubyte[.gz] not found in " + empty,
                "Invalid value for option '--epochs': 'many' is not an int");
        for (int i = 0; i < bad.size(); i++) {
            assertUsageError(launch(2, Train.class, base.resolve("train-" + i), bad.get(i)), "Train", named.get(i));
        }
        assertUsageError(launch(2, TrainDataParallel.class, base.resolve("dp"), List.of("--lr", "0")), "TrainDataParallel",
                "--lr must be positive, got 0.0");
        assertUsageError(launch(3, TrainDualParallel.class, base.resolve("dual"), List.of()), "TrainDualParallel",
                "needs an even number of ranks (pairs), got 3");
        assertUsageError(launch(2, TrainEnsemble.class, base.resolve("ensemble"), List.of("--test-examples", "-5")),
                "TrainEnsemble", "--test-examples must be at least 0, got -5");
        assertUsageError(MpiLauncher.run(2, TrainGnn.class.getName(), List.of("--hidden", "0"), base, 60), "TrainGnn",
                "--hidden must be at least 1, got 0");
        Path missing = base.resolve("no-such-graph.npz");
        assertUsageError(MpiLauncher.run(2, TrainGnn.class.getName(), List.of("--data", missing.toString()), base, 60), "TrainGnn",
                "--data " + missing + ": no such file");
        assertUsageError(MpiLauncher.run(1, Partition.class.getName(), List.of("--data", missing.toString()), base, 60), "Partition",
                "--data " + missing + ": no such file");

        MpiLauncher.Result version = MpiLauncher.run(1, Train.class.getName(), List.of("--version"), base, 60);
        assertCompleted(version);
        assertTrue(version.output().matches("(?s).*mn4j \\S+ \\(LibTorch \\S+ .*Open MPI \\S+ .*"), version::describe);
    }

    /** One line naming the problem, a hint to --help, exit code 2; no stack trace, no usage dump, no MPI abort. */
    static void assertUsageError(MpiLauncher.Result r, String program, String problem) {
        assertFalse(r.timedOut(), r::describe);
        assertEquals(2, r.exitCode(), r::describe);
        assertTrue(r.output().contains(program + ": ") && r.output().contains(problem), () -> "no line '" + problem + "' in\n" + r.describe());
        assertTrue(r.output().contains("Try '" + program + " --help'"), r::describe);
        for (String noise : List.of("Exception", "\tat ", "MPI_ABORT", "Usage:")) {
            assertFalse(r.output().contains(noise), () -> "'" + noise + "' in\n" + r.describe());
        }
    }
}
