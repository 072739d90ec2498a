package io.mn4j.mpitests.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.mpitests.MpiLauncher;
import io.mn4j.mpitests.SimulatedCluster;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import picocli.CommandLine;

/** Running example programs on the cluster and on one host, and comparing what they wrote. */
final class ClusterRuns {
    /** A job's whole time, start-up included, on a loaded 2-core machine. */
    static final long TIMEOUT_SECONDS = 300;

    private ClusterRuns() {
    }

    /** Runs {@code main} with {@code args}, its mpirun output in {@code dir}. */
    static MpiLauncher.Result run(MpiLauncher.Launch launch, int ranks, Class<?> main, Path dir, List<String> args) throws Exception {
        return MpiLauncher.run(launch, ranks, main.getName(), args, dir, TIMEOUT_SECONDS, Map.of(), job -> {
        });
    }

    static void assertCompleted(MpiLauncher.Result r) {
        assertFalse(r.timedOut(), () -> "job hung:\n" + r.describe());
        assertEquals(0, r.exitCode(), () -> "job failed:\n" + r.describe());
    }

    /** The rows of an {@code epochs.csv} as numbers (header dropped). */
    static List<double[]> epochs(Path csv) throws IOException {
        List<double[]> rows = new ArrayList<>();
        List<String> lines = Files.readAllLines(csv);
        for (String line : lines.subList(1, lines.size())) {
            rows.add(Arrays.stream(line.split(",")).mapToDouble(Double::parseDouble).toArray());
        }
        return rows;
    }

    /**
     * The same number of epochs, and in each the columns given equal within {@code tol}
     * (absolute); returns the largest difference seen.
     */
    static double assertSameColumns(List<double[]> expected, List<double[]> actual, double tol, String what, int... columns) {
        assertEquals(expected.size(), actual.size(), what + ": epochs");
        double worst = 0;
        for (int e = 0; e < expected.size(); e++) {
            for (int c : columns) {
                double d = Math.abs(expected.get(e)[c] - actual.get(e)[c]);
                worst = Math.max(worst, d);
                int epoch = e + 1;
                assertTrue(d <= tol, () -> what + ", epoch " + epoch + ", column " + c + ": one host " + Arrays.toString(expected.get(epoch - 1))
                        + ", cluster " + Arrays.toString(actual.get(epoch - 1)));
            }
        }
        return worst;
    }

    /** Copies {@code metadata.json} and the given partitions' folders of {@code full} into {@code to}. */
    static void copyPartitions(Path full, Path to, int... parts) throws IOException {
        Files.createDirectories(to);
        Files.copy(full.resolve("metadata.json"), to.resolve("metadata.json"));
        for (int k : parts) {
            Path from = full.resolve("part-" + k);
            try (Stream<Path> files = Files.walk(from)) {
                for (Path f : files.toList()) {
                    Files.copy(f, to.resolve(full.relativize(f).toString()));
                }
            }
        }
    }

    /** The names in a directory, sorted. */
    static List<String> list(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    /** Runs a picocli program in this JVM; fails unless it exits with 0. */
    static String inProcess(Object command, String... args) {
        StringWriter out = new StringWriter();
        CommandLine cl = new CommandLine(command);
        cl.setOut(new PrintWriter(out));
        cl.setErr(new PrintWriter(out));
        int code = cl.execute(args);
        assertEquals(0, code, () -> command.getClass().getSimpleName() + " " + String.join(" ", args) + " failed:\n" + out);
        return out.toString();
    }

    /** Waits until rank 0 of a {@code TrainGnn} job writing to {@code log} reports epoch {@code n}; false if the job ended first. */
    static boolean awaitEpoch(Process job, Path log, int n) {
        String line = String.format("epoch %7d/", n);
        try {
            while (job.isAlive()) {
                if (Files.exists(log) && Files.readString(log).contains(line)) {
                    return true;
                }
                Thread.sleep(200);
            }
            return false;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
