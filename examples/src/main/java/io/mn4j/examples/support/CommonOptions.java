package io.mn4j.examples.support;

import io.mn4j.iterators.FashionMnist;
import io.mn4j.iterators.TensorDataset;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.bytedeco.pytorch.Tensor;
import picocli.CommandLine.Option;

/** Options shared by the Fashion-MNIST training examples (a picocli mixin). */
public final class CommonOptions {
    @Option(names = "--data", paramLabel = "DIR",
            description = "Directory with the Fashion-MNIST IDX files, plain or .gz (default: $"
                    + FashionMnist.DIR_ENV + " or " + FashionMnist.DEFAULT_DIR + ").")
    public Path data;

    @Option(names = {"-e", "--epochs"}, paramLabel = "N", description = "Training epochs (default: ${DEFAULT-VALUE}).")
    public int epochs = 12;

    @Option(names = {"-b", "--batch-size"}, paramLabel = "B",
            description = "Examples per mini-batch (per rank where ranks take different batches; default: ${DEFAULT-VALUE}).")
    public int batchSize = 100;

    @Option(names = "--lr", paramLabel = "RATE", description = "Adam's initial learning rate (default: ${DEFAULT-VALUE}).")
    public double lr = 1e-3;

    @Option(names = "--schedule", paramLabel = "KIND",
            description = "Learning rate schedule: ${COMPLETION-CANDIDATES} (cosine decays to 0 over the run; default: ${DEFAULT-VALUE}).")
    public Schedule schedule = Schedule.cosine;

    @Option(names = "--hidden", paramLabel = "W,W,...", split = ",",
            description = "Hidden layer widths of the MLP (default: 256,256,256).")
    public int[] hidden = {256, 256, 256};

    @Option(names = "--seed", paramLabel = "S", description = "Seed of the initial weights and of the shuffling (default: ${DEFAULT-VALUE}).")
    public long seed = 1;

    @Option(names = "--train-examples", paramLabel = "N",
            description = "Use only the first N training examples (0: all 60000; default: ${DEFAULT-VALUE}).")
    public int trainExamples = 0;

    @Option(names = "--test-examples", paramLabel = "N",
            description = "Use only the first N test examples (0: all 10000; default: ${DEFAULT-VALUE}).")
    public int testExamples = 0;

    @Option(names = "--eval-batch-size", paramLabel = "B", description = "Batch size for evaluation (default: ${DEFAULT-VALUE}).")
    public int evalBatchSize = 1000;

    @Option(names = "--out", paramLabel = "DIR",
            description = "Where rank 0 writes epochs.csv and curves.png (default: runs/<example>).")
    public Path out;

    @Option(names = "--no-progress", description = "Do not draw the progress bar.")
    public boolean noProgress;

    @Option(names = "--no-plot", description = "Do not write curves.png.")
    public boolean noPlot;

    /** Learning rate schedules. */
    public enum Schedule { cosine, constant }

    /** The data directory to use. */
    public Path dataDir() {
        return data != null ? data : FashionMnist.defaultDir();
    }

    /** The output directory, {@code runs/<name>} unless given. */
    public Path outDir(String name) {
        return out != null ? out : Path.of("runs", name);
    }

    /** The learning rate at {@code step} of {@code total} steps. */
    public double lrAt(long step, long total) {
        if (schedule == Schedule.constant || total <= 0) {
            return lr;
        }
        return lr * 0.5 * (1 + Math.cos(Math.PI * Math.min(step, total) / total));
    }

    /** What a resumed run must share with the run that saved the checkpoint: everything that changes the numbers. */
    public Map<String, String> identity(String program, int ranks) {
        return Map.of("program", program, "hidden", Arrays.toString(hidden), "seed", String.valueOf(seed),
                "batch", String.valueOf(batchSize), "lr", lr + " " + schedule + " over " + epochs + " epochs",
                "data", trainExamples + " training / " + testExamples + " test examples (0: all)");
    }

    /** Loads the training or test split, truncated to the requested number of examples. */
    public TensorDataset load(boolean train) {
        TensorDataset all = FashionMnist.load(dataDir(), train);
        int limit = train ? trainExamples : testExamples;
        if (limit == 0 || limit >= all.size()) {
            return all;
        }
        // copies of the first rows, so that the rest of the split can be freed now
        List<Tensor> fields = new ArrayList<>();
        for (Tensor f : all.fields()) {
            Tensor head = f.narrow(0, 0, limit);
            fields.add(head.clone());
            head.close();
            f.close();
        }
        return new TensorDataset(fields);
    }

    /**
     * Checks the option values, and on the rank that reads the data that its files are there,
     * before MPI starts: a bad value is one line and exit code 2 (see {@link Cli}), not an aborted job.
     */
    public void validate() {
        atLeast("--epochs", epochs, 1);
        atLeast("--batch-size", batchSize, 1);
        atLeast("--eval-batch-size", evalBatchSize, 1);
        atLeast("--train-examples", trainExamples, 0);
        atLeast("--test-examples", testExamples, 0);
        if (!(lr > 0)) {
            throw new IllegalArgumentException("--lr must be positive, got " + lr);
        }
        for (int w : hidden) {
            atLeast("every --hidden width", w, 1);
        }
        if (Cli.launchRank() == 0) {
            FashionMnist.requireFiles(dataDir());
        }
    }

    private static void atLeast(String option, long value, long min) {
        if (value < min) {
            throw new IllegalArgumentException(option + " must be at least " + min + ", got " + value);
        }
    }
}
