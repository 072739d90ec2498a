package io.mn4j.mpitests.checkpoint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.mpitests.MpiLauncher;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The programs killed and resumed: a random rank is killed with SIGKILL at a random point of a
 * run that checkpoints (between checkpoints or in the middle of one), the job is started again
 * with {@code --resume}, and every epoch's loss and accuracy (the losses as exact doubles) must
 * equal those of an uninterrupted run with the same options, bitwise. (Bad input, a resume with
 * another job size among it, is {@link CheckpointSuite}'s.)
 */
class ResumeAfterKillTest {
    private static final long TIMEOUT = 240;
    /**
     * Large enough that five epochs follow the last marker a kill may wait for (every marker falls
     * in the first epoch), so the kill lands before the job ends on a fast, quiet machine too (1200
     * examples in 3 epochs, checkpointed per epoch, ended within the killer's delay there).
     */
    private static final List<String> MLP = List.of("--epochs", "6", "--train-examples", "12000", "--test-examples", "300",
            "--hidden", "64,64,64", "--no-progress", "--no-plot");

    @ParameterizedTest(name = "{0} on {1} ranks, seed {2}")
    @CsvSource({"Train, 3, 2, 4it", "TrainDataParallel, 2, 3, 15it"})
    void killedAndResumedGivesTheSameCurve(String program, int ranks, long seed, String every,
            @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path dir) throws Exception {
        String main = "io.mn4j.examples." + program;
        List<String> ckpt = List.of("--checkpoint-dir", dir.resolve("ckpt").toString(), "--checkpoint-every", every);
        List<List<String>> reference = run(main, ranks, dir.resolve("reference"),
                List.of("--checkpoint-dir", dir.resolve("ckpt-reference").toString(), "--checkpoint-every", every), false, null);

        RankKiller killer = new RankKiller(dir.resolve("killed").resolve("mpirun.log"), "checkpoint at iteration",
                every.endsWith("it") ? 4 : 2, ranks, seed);
        MpiLauncher.Result killed = MpiLauncher.run(MpiLauncher.LOCAL, ranks, main, args(dir.resolve("killed"), ckpt, false),
                dir.resolve("killed"), TIMEOUT, Map.of(), killer);
        assertFalse(killed.timedOut(), killed::describe);
        assertNotEquals(0, killed.exitCode(), () -> killer.what() + "\n" + killed.describe());

        List<List<String>> resumed = run(main, ranks, dir.resolve("resumed"), ckpt, true, out ->
                assertTrue(out.contains("resuming from checkpoint"), () -> killer.what() + ": no resume:\n" + out));
        assertEquals(reference, resumed, killer.what());
    }

    /**
     * TrainGnn on Cora in SAR, pipelined (smoothing, staleness 1: deterministic under the restart
     * rule of {@code GnnCheckpoints}) and sampled mode: the same, with a checkpoint every epoch.
     */
    @ParameterizedTest(name = "TrainGnn {0} on {1} ranks, seed {2}")
    @CsvSource({"sar, 3, 4", "pipelined, 2, 5", "sampled, 2, 6"})
    void trainGnnKilledAndResumedGivesTheSameCurve(String mode, int ranks, long seed, @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path dir)
            throws Exception {
        String main = "io.mn4j.examples.TrainGnn";
        List<String> how = switch (mode) {
            case "pipelined" -> List.of("--mode", "pipelined", "--smoothing", "0.9");
            case "sampled" -> List.of("--model", "sage", "--fanouts", "5,5", "--batch-size", "32");
            default -> List.of("--mode", "sar");
        };
        // At least eight epochs follow the last marker a kill may wait for: the kill lands before the end.
        List<String> common = new ArrayList<>(List.of("--data", "cora", "--epochs", "12", "--no-progress", "--no-plot"));
        common.addAll(how);
        List<List<String>> reference = gnn(main, ranks, dir.resolve("reference"), common, dir.resolve("ckpt-reference"), false, null);
        List<String> ckpt = new ArrayList<>(common);
        ckpt.addAll(List.of("--checkpoint-dir", dir.resolve("ckpt").toString(), "--out", dir.resolve("killed").toString()));
        RankKiller killer = new RankKiller(dir.resolve("killed").resolve("mpirun.log"), "checkpoint at epoch", 4, ranks, seed);
        MpiLauncher.Result killed = MpiLauncher.run(MpiLauncher.LOCAL, ranks, main, ckpt, dir.resolve("killed"), TIMEOUT, Map.of(), killer);
        assertFalse(killed.timedOut(), killed::describe);
        assertNotEquals(0, killed.exitCode(), () -> killer.what() + "\n" + killed.describe());
        List<String> again = new ArrayList<>(common);
        again.addAll(List.of("--partitions", dir.resolve("killed").resolve("partitions").toString()));
        List<List<String>> resumed = gnn(main, ranks, dir.resolve("resumed"), again, dir.resolve("ckpt"), true, out ->
                assertTrue(out.contains("resuming from checkpoint") || out.contains("starting from the beginning"),
                        () -> killer.what() + ": no resume:\n" + out));
        assertEquals(reference, resumed, killer.what());
    }

    private static List<List<String>> gnn(String main, int ranks, Path out, List<String> common, Path ckpt, boolean resume,
            Consumer<String> checkOutput) throws IOException, InterruptedException {
        List<String> a = new ArrayList<>(common);
        a.addAll(List.of("--checkpoint-dir", ckpt.toString(), "--out", out.toString()));
        if (resume) {
            a.add("--resume");
        }
        return finish(main, ranks, out, a, checkOutput);
    }

    /** Runs a program to its end; returns epochs.csv's epoch, loss and accuracy columns. */
    private static List<List<String>> run(String main, int ranks, Path out, List<String> extra, boolean resume,
            Consumer<String> checkOutput) throws IOException, InterruptedException {
        return finish(main, ranks, out, args(out, extra, resume), checkOutput);
    }

    /** Runs a program with these arguments to its end; returns epochs.csv's first five columns. */
    private static List<List<String>> finish(String main, int ranks, Path out, List<String> args,
            Consumer<String> checkOutput) throws IOException, InterruptedException {
        MpiLauncher.Result r = MpiLauncher.run(MpiLauncher.LOCAL, ranks, main, args, out, TIMEOUT, Map.of(), p -> { });
        assertFalse(r.timedOut(), r::describe);
        assertEquals(0, r.exitCode(), r::describe);
        if (checkOutput != null) {
            checkOutput.accept(r.output());
        }
        List<List<String>> rows = new ArrayList<>();
        for (String line : Files.readAllLines(out.resolve("epochs.csv"), StandardCharsets.UTF_8)) {
            rows.add(Arrays.asList(line.split(",")).subList(0, 5));
        }
        return rows;
    }

    private static List<String> args(Path out, List<String> extra, boolean resume) {
        List<String> a = new ArrayList<>(MLP);
        a.addAll(extra);
        a.addAll(List.of("--out", out.toString()));
        if (resume) {
            a.add("--resume");
        }
        return a;
    }
}
