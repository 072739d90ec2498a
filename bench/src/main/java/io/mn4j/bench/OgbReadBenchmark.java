package io.mn4j.bench;

import io.mn4j.examples.gnn.JvmSetup;
import io.mn4j.examples.support.Cli;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.io.OgbNodeReader;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * How fast {@link OgbNodeReader} reads an OGB folder, against two bounds measured in the same run on
 * the same {@code edge.csv.gz}: gunzip alone (bytes through {@code GZIPInputStream}, nothing
 * parsed), and a string-per-field parse ({@code BufferedReader.readLine}, {@code split(",")},
 * {@code Long.parseLong}), what a general CSV library costs at least. The folder (random edges,
 * features with six decimals, labels, a split) is written first unless it is there.
 */
@Command(name = "OgbReadBenchmark", mixinStandardHelpOptions = true, description = "Reading speed of OGB node-property folders.")
public final class OgbReadBenchmark implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--dir", description = "The folder to write (if missing) and read (default: ${DEFAULT-VALUE}).")
    Path dir = Path.of("runs/ogb-bench/ogbn_synthetic");

    @Option(names = "--nodes", description = "Nodes (default: ${DEFAULT-VALUE}).")
    int nodes = 1_000_000;

    @Option(names = "--edges", description = "Edges (default: ${DEFAULT-VALUE}).")
    int edges = 20_000_000;

    @Option(names = "--features", description = "Features per node (default: ${DEFAULT-VALUE}).")
    int features = 100;

    public static void main(String[] args) {
        JvmSetup.limitNativeMemory();
        JvmSetup.quietLibraryLogs();
        Cli.main(new OgbReadBenchmark(), args);
    }

    @Override
    public Integer call() throws IOException {
        PrintWriter o = spec.commandLine().getOut();
        if (!Files.exists(dir.resolve("split/random/test.csv.gz"))) {
            write();
        }
        Path edgeFile = dir.resolve("raw/edge.csv.gz");
        long t0 = System.nanoTime();
        long bytes = gunzip(edgeFile);
        double gunzip = (System.nanoTime() - t0) / 1e9;
        t0 = System.nanoTime();
        long lines = splitAndParse(edgeFile);
        double strings = (System.nanoTime() - t0) / 1e9;
        Path edgesOnly = edgesOnly();
        t0 = System.nanoTime();
        try (Graph g = OgbNodeReader.read(edgesOnly)) {
            double read = (System.nanoTime() - t0) / 1e9;
            o.printf(Locale.ROOT, "%s: %d lines, %.0f MB unpacked%n", edgeFile, lines, bytes / 1e6);
            o.printf(Locale.ROOT, "  gunzip only:                  %6.2f s  %5.1f M edges/s%n", gunzip, lines / gunzip / 1e6);
            o.printf(Locale.ROOT, "  readLine + split + parseLong: %6.2f s  %5.1f M edges/s%n", strings, lines / strings / 1e6);
            o.printf(Locale.ROOT, "  OgbNodeReader (edges, split): %6.2f s  %5.1f M edges/s, CSR included%n", read, g.numEdges() / read / 1e6);
        }
        t0 = System.nanoTime();
        try (Graph g = OgbNodeReader.read(dir)) {
            double read = (System.nanoTime() - t0) / 1e9;
            o.printf(Locale.ROOT, "  OgbNodeReader, whole folder:  %6.2f s  %s; %.1f M feature values/s%n", read, g,
                    (double) g.numNodes() * g.numFeatures() / read / 1e6);
        }
        o.flush();
        return 0;
    }

    /** A folder beside {@code dir} with its edges, node count and split only (symbolic links). */
    private Path edgesOnly() throws IOException {
        Path d = dir.resolveSibling(dir.getFileName() + "_edges");
        for (String name : new String[] {"raw/edge.csv.gz", "raw/num-node-list.csv.gz", "split/random/train.csv.gz",
            "split/random/valid.csv.gz", "split/random/test.csv.gz"}) {
            Path link = d.resolve(name);
            if (!Files.exists(link)) {
                Files.createDirectories(link.getParent());
                Files.createSymbolicLink(link, dir.resolve(name).toAbsolutePath());
            }
        }
        return d;
    }

    private static long gunzip(Path f) throws IOException {
        byte[] buf = new byte[1 << 16];
        long n = 0;
        try (InputStream in = new GZIPInputStream(Files.newInputStream(f), 1 << 16)) {
            for (int r; (r = in.read(buf)) > 0; ) {
                n += r;
            }
        }
        return n;
    }

    private static long splitAndParse(Path f) throws IOException {
        long lines = 0, check = 0;
        try (BufferedReader r = new BufferedReader(new InputStreamReader(new GZIPInputStream(Files.newInputStream(f), 1 << 16),
                StandardCharsets.US_ASCII), 1 << 16)) {
            for (String line; (line = r.readLine()) != null; lines++) {
                String[] fields = line.split(",");
                check += Long.parseLong(fields[0]) ^ Long.parseLong(fields[1]);
            }
        }
        return check == Long.MIN_VALUE ? -1 : lines;
    }

    private void write() throws IOException {
        Random r = new Random(1);
        String[] values = new String[1000];
        for (int i = 0; i < values.length; i++) {
            values[i] = String.format(Locale.ROOT, "%.6f", r.nextGaussian());
        }
        try (PrintWriter w = gz("raw/edge.csv.gz")) {
            for (int e = 0; e < edges; e++) {
                w.append(Integer.toString(r.nextInt(nodes))).append(',').append(Integer.toString(r.nextInt(nodes))).append('\n');
            }
        }
        try (PrintWriter w = gz("raw/num-node-list.csv.gz")) {
            w.println(nodes);
        }
        try (PrintWriter w = gz("raw/node-feat.csv.gz"); PrintWriter l = gz("raw/node-label.csv.gz")) {
            for (int v = 0; v < nodes; v++) {
                for (int j = 0; j < features; j++) {
                    w.append(values[r.nextInt(values.length)]).append(j + 1 < features ? ',' : '\n');
                }
                l.append(Integer.toString(r.nextInt(40))).append('\n');
            }
        }
        String[] names = {"train", "valid", "test"};
        for (int k = 0; k < 3; k++) {
            try (PrintWriter w = gz("split/random/" + names[k] + ".csv.gz")) {
                for (int v = k; v < nodes; v += 3) {
                    w.println(v);
                }
            }
        }
    }

    private PrintWriter gz(String name) throws IOException {
        Path f = dir.resolve(name);
        Files.createDirectories(f.getParent());
        OutputStream out = new GZIPOutputStream(Files.newOutputStream(f), 1 << 16);
        return new PrintWriter(new BufferedWriter(new OutputStreamWriter(out, StandardCharsets.US_ASCII), 1 << 16));
    }
}
