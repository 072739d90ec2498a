package io.mn4j.mpitests.gnn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.examples.Partition;
import io.mn4j.examples.TrainGnn;
import io.mn4j.gnn.partition.PartitionReader;
import io.mn4j.mpitests.MpiLauncher;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.RandomAccessFile;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/**
 * The {@code Partition} and {@code TrainGnn} programs: {@code Partition} in this JVM (it needs no
 * MPI), {@code TrainGnn} under {@code mpirun -np 2} on the directory it wrote and on a small
 * synthetic graph it partitions itself; bad partition directories end the job on every rank with a
 * message, a non-zero exit code and no hang.
 */
class TrainGnnCliTest {
    static final long TIMEOUT = 300;

    /** Runs a picocli command in this JVM; returns its exit code and output. */
    static String[] inProcess(Object command, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = new CommandLine(command);
        cl.setOut(new PrintWriter(out));
        cl.setErr(new PrintWriter(err));
        int code = cl.execute(args);
        return new String[] {String.valueOf(code), out.toString(), err.toString()};
    }

    static MpiLauncher.Result trainGnn(Path out, String... args) throws Exception {
        Files.createDirectories(out);
        List<String> all = new ArrayList<>(List.of("--no-progress", "--out", out.toString()));
        all.addAll(Arrays.asList(args));
        return MpiLauncher.run(2, TrainGnn.class.getName(), all, out, TIMEOUT);
    }

    static Path partitionCora(Path dir, int parts) {
        String[] r = inProcess(new Partition(), "--data", "cora", "--parts", String.valueOf(parts), "--method", "ldg", "--out", dir.toString());
        assertEquals("0", r[0], () -> "Partition failed:\n" + r[1] + r[2]);
        return dir;
    }

    @Test
    void helpDescribesTheOptions() {
        String[] t = inProcess(new TrainGnn(), "--help");
        assertEquals("0", t[0]);
        for (String option : List.of("--data", "--model", "--mode", "--partitions", "--partitioner", "--epochs", "--hidden", "--layers",
                "--heads", "--dropout", "--lr", "--weight-decay", "--seed", "--nodes", "--smoothing", "--staleness", "--fanouts", "--batch-size",
                "maxPhysicalBytes")) {
            assertTrue(t[1].contains(option), "TrainGnn --help lacks " + option + ":\n" + t[1]);
        }
        String[] p = inProcess(new Partition(), "--help");
        assertEquals("0", p[0]);
        assertTrue(p[1].contains("--parts") && p[1].contains("--method") && p[1].contains("--out"), p[1]);
        String[] bad = inProcess(new TrainGnn(), "--mode", "fast");
        assertEquals("2", bad[0], "a usage error");
        assertTrue(bad[2].contains("unknown --mode 'fast'"), bad[2]);
        String[] smoothingWithoutPipeline = inProcess(new TrainGnn(), "--mode", "oneshot", "--smoothing", "0.9");
        assertTrue(smoothingWithoutPipeline[2].contains("--smoothing applies to --mode pipelined only (got --mode oneshot)"),
                smoothingWithoutPipeline[2]);
        String[] stalenessWithoutPipeline = inProcess(new TrainGnn(), "--staleness", "2");
        assertTrue(stalenessWithoutPipeline[2].contains("--staleness applies to --mode pipelined only (got --mode sar)"),
                stalenessWithoutPipeline[2]);
        for (String[] usage : List.of(
                new String[] {"sampled mini-batches train SAGE models, not GCN", "--fanouts", "10,10"},
                new String[] {"3 fanouts for 2 layers: give one per layer", "--model", "sage", "--fanouts", "5,5,5"},
                new String[] {"each fanout must be at least 1, or -1 for all neighbours; got 0", "--model", "sage", "--fanouts", "5,0"},
                new String[] {"--batch-size applies to sampled mini-batches: add --fanouts", "--batch-size", "8"},
                new String[] {"the batch size must be at least 1, got 0", "--model", "sage", "--fanouts", "5,5", "--batch-size", "0"},
                new String[] {"GAT: the hidden width 10 is not a multiple of 3 heads", "--model", "gat", "--hidden", "10", "--heads", "3"},
                new String[] {"--mode pipelined has nothing to pipeline", "--model", "sage", "--fanouts", "5,5", "--mode", "pipelined"})) {
            String[] r = inProcess(new TrainGnn(), Arrays.copyOfRange(usage, 1, usage.length));
            assertEquals("2", r[0], () -> "a usage error for " + Arrays.toString(usage) + ": " + r[2]);
            assertTrue(r[2].contains(usage[0]), r[2]);
        }
    }

    @Test
    void partitionWritesADirectoryTrainGnnTrainsOn(@TempDir(cleanup = CleanupMode.ON_SUCCESS) Path base) throws Exception {
        String[] r = inProcess(new Partition(), "--data", "cora", "--parts", "2", "--method", "ldg", "--out", base.resolve("parts").toString());
        assertEquals("0", r[0], () -> r[1] + r[2]);
        for (String s : List.of("2708 nodes", "partitioned by ldg into 2 parts", "edge cut:", "balance (largest / mean): nodes",
                "communication volume:", "rows sent per layer")) {
            assertTrue(r[1].contains(s), "Partition output lacks '" + s + "':\n" + r[1]);
        }
        assertTrue(Files.exists(base.resolve("parts/metadata.json")));

        Path out = base.resolve("run");
        MpiLauncher.Result t = trainGnn(out, "--partitions", base.resolve("parts").toString(), "--epochs", "3", "--hidden", "8",
                "--model", "sage", "--mode", "sequential");
        assertFalse(t.timedOut(), t::describe);
        assertEquals(0, t.exitCode(), t::describe);
        assertTrue(t.output().contains("2-layer SAGE") && t.output().contains("SEQUENTIAL aggregation"), t::describe);
        assertTrue(t.output().contains("over 2 ranks") && t.output().contains("partitions " + base.resolve("parts")), t::describe);
        assertTrue(t.output().contains("epoch 3/3"), t::describe);
        assertTrue(t.output().contains("test accuracy at the best validation epoch"), t::describe);
        assertEquals(4, Files.readAllLines(out.resolve("epochs.csv")).size(), "header and 3 epochs");
        assertTrue(Files.size(out.resolve("curves.png")) > 1000, "curves.png written");

        Path sampled = base.resolve("sampled");
        MpiLauncher.Result m = trainGnn(sampled, "--partitions", base.resolve("parts").toString(), "--epochs", "3", "--hidden", "8",
                "--model", "sage", "--fanouts", "5,-1", "--batch-size", "16", "--no-plot");
        assertFalse(m.timedOut(), m::describe);
        assertEquals(0, m.exitCode(), m::describe);
        assertTrue(m.output().contains("mini-batches of 16 seeds per rank, fanouts [5, -1], SAR evaluation"), m::describe);
        assertTrue(m.output().contains("epoch 3/3"), m::describe);
        assertEquals(4, Files.readAllLines(sampled.resolve("epochs.csv")).size(), "header and 3 epochs");
    }

    /**
     * --patience stops once neither validation figure improved for that many epochs, reports the
     * last epoch that improved both, and exports that epoch's weights: loaded back, they evaluate
     * to the accuracies that epoch's line of epochs.csv holds.
     */
    @Test
    void earlyStoppingKeepsAndExportsTheLastEpochThatImprovedBoth(@TempDir(cleanup = CleanupMode.ON_SUCCESS) Path dir) throws Exception {
        Path npz = dir.resolve("kept.npz");
        Path out = dir.resolve("train");
        MpiLauncher.Result t = trainGnn(out, "--data", "cora", "--epochs", "300", "--patience", "3", "--lr", "0.05",
                "--export", npz.toString(), "--no-plot");
        assertFalse(t.timedOut(), t::describe);
        assertEquals(0, t.exitCode(), t::describe);
        Matcher m = Pattern.compile("early stopping \\(patience 3\\): stopped after epoch (\\d+); the model kept is epoch (\\d+)'s "
                + "\\(val ([0-9.]+)%, val loss [0-9.]+\\): test accuracy ([0-9.]+)%").matcher(t.output());
        assertTrue(m.find(), t::describe);
        int stopped = Integer.parseInt(m.group(1));
        int kept = Integer.parseInt(m.group(2));
        assertTrue(stopped < 300 && kept + 3 <= stopped, "stopped after " + stopped + ", kept " + kept);
        List<String> lines = Files.readAllLines(out.resolve("epochs.csv"));
        assertEquals(stopped + 1, lines.size(), "header and the epochs trained");
        String[] row = lines.get(kept).split(",");
        String train = String.format(Locale.ROOT, "%.2f", 100 * Double.parseDouble(row[2]));
        String val = String.format(Locale.ROOT, "%.2f", 100 * Double.parseDouble(row[3]));
        String test = String.format(Locale.ROOT, "%.2f", 100 * Double.parseDouble(row[4]));
        assertEquals(val + " " + test, m.group(3) + " " + m.group(4), "the kept epoch's line: " + lines.get(kept));

        MpiLauncher.Result loaded = trainGnn(dir.resolve("load"), "--data", "cora", "--init-from", npz.toString(), "--evaluate-only");
        assertEquals(0, loaded.exitCode(), loaded::describe);
        String expected = "accuracy train " + train + "%, val " + val + "%, test " + test + "%";
        assertTrue(loaded.output().contains(expected), "the exported weights are epoch " + kept + "'s (" + expected + "):\n"
                + loaded.describe());
    }

    @ParameterizedTest(name = "--mode {0} --smoothing {1}")
    @CsvSource({"oneshot, 0", "pipelined, 0.95"})
    void defaultSyntheticPathOnASmallGraphLearns(String mode, String smoothing, @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path out)
            throws Exception {
        MpiLauncher.Result t = trainGnn(out, "--nodes", "4000", "--epochs", "30", "--hidden", "16", "--mode", mode,
                "--smoothing", smoothing, "--partitioner", "ldg", "--no-plot");
        assertFalse(t.timedOut(), t::describe);
        assertEquals(0, t.exitCode(), t::describe);
        assertTrue(Files.exists(out.resolve("partitions/metadata.json")), "rank 0 wrote the partitions");
        List<String> lines = Files.readAllLines(out.resolve("epochs.csv"));
        assertEquals(31, lines.size(), t::describe);
        double first = Double.parseDouble(lines.get(1).split(",")[1]);
        double lastLoss = Double.parseDouble(lines.get(30).split(",")[1]);
        double testAcc = Double.parseDouble(lines.get(30).split(",")[4]);
        long bytes = Long.parseLong(lines.get(30).split(",")[7]);
        long aggregation = Long.parseLong(lines.get(30).split(",")[8]);
        assertTrue(lastLoss < first * 0.8, "loss falls: " + first + " -> " + lastLoss);
        assertTrue(testAcc > 0.5, "8 classes: far above chance after 30 epochs, got " + testAcc);
        // One-shot: per epoch every boundary row crosses once per layer forward, once back as a
        // gradient and once in the evaluation forward, at the layer's width (16 hidden, 8 classes);
        // besides, the differentiable alltoall checks the order of collectives in backward with a
        // 16-byte allreduce per layer and rank. Pipelined sends the same rows and gradients (for
        // the next epoch) and its evaluation reads fresh rows: the same bytes, without the checks.
        long volume = PartitionReader.readMetadata(out.resolve("partitions")).commVolume();
        long rows = 3 * volume * (16 + 8) * 4;
        assertTrue(aggregation >= rows && aggregation <= rows + 2 * 2 * 16,
                "aggregation bytes per epoch " + aggregation + " = 3 x boundary rows x widths x 4 = " + rows + " (+ order checks)");
        assertTrue(bytes > aggregation, "all bytes include the gradient all-reduce too");
        String last = t.output().strip().lines().reduce((a, b) -> b).orElse("");
        assertTrue(last.startsWith("test accuracy at the best validation epoch"), "the final line: " + last);
    }

    @Test
    void badPartitionDirectoriesEndTheJobOnEveryRank(@TempDir(cleanup = CleanupMode.ON_SUCCESS) Path base) throws Exception {

        MpiLauncher.Result missing = trainGnn(base.resolve("missing"), "--partitions", base.resolve("nowhere").toString());
        assertFailedOnEveryRank(missing, "nowhere");

        Path corrupt = partitionCora(base.resolve("corrupt"), 2);
        try (RandomAccessFile f = new RandomAccessFile(corrupt.resolve("part-1/features.npy").toFile(), "rw")) {
            f.setLength(f.length() / 2);
        }
        MpiLauncher.Result cut = trainGnn(base.resolve("cut"), "--partitions", corrupt.toString());
        assertFailedOnEveryRank(cut, "part-1/features.npy");
        assertTrue(cut.output().contains("TrainGnn: rank 0: stopping because another rank failed"), cut::describe);

        Path four = partitionCora(base.resolve("four"), 4);
        MpiLauncher.Result mismatch = trainGnn(base.resolve("mismatch"), "--partitions", four.toString());
        assertFailedOnEveryRank(mismatch, "split into 4 partitions but the job expects 2");
    }

    private static void assertFailedOnEveryRank(MpiLauncher.Result r, String fragment) throws IOException {
        assertFalse(r.timedOut(), () -> "hung:\n" + r.describe());
        assertNotEquals(0, r.exitCode(), r::describe);
        for (int rank = 0; rank < 2; rank++) {
            String prefix = "TrainGnn: rank " + rank + ": ";
            assertTrue(r.output().lines().anyMatch(l -> l.startsWith(prefix)), () -> "no message from rank:\n" + r.describe());
        }
        assertTrue(r.output().contains(fragment), () -> "message lacks '" + fragment + "':\n" + r.describe());
        assertFalse(r.output().contains("Exception in thread"), () -> "a clean message, not a stack trace:\n" + r.describe());
    }
}
