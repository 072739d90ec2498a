package io.mn4j.gnn.partition;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.zip.GZIPOutputStream;

/** Random OGB node-property folders for tests, in the ogb package's layout. */
final class OgbTestFolders {
    private OgbTestFolders() {
    }

    /** What to put in a folder. */
    static final class Spec {
        int nodes = 300;
        int lines = 2000;
        int features = 5;
        int classes = 4;
        boolean labels = true;
        boolean counts = true;
        boolean gzip = true;
        /** Write every edge in both directions (a symmetric file). */
        boolean bothDirections;
        /** Repeat some lines and add self loops. */
        boolean messy = true;
        long seed = 7;
    }

    /**
     * Writes a folder: random edges among all but the last 3 nodes (two stay isolated, the last has one edge), with
     * repeats, reversed repeats and self loops when {@code messy}; random features; labels with
     * some "nan"; a random split "rnd".
     */
    static Path write(Path dir, Spec s) throws IOException {
        SplittableRandom r = new SplittableRandom(s.seed);
        String ext = s.gzip ? ".csv.gz" : ".csv";
        long written = 0;
        Set<Long> pairs = new HashSet<>();
        try (Writer w = open(dir.resolve("raw/edge" + ext), s.gzip)) {
            for (int i = 0; i < s.lines; i++) {
                int a = r.nextInt(s.nodes - 3), b = r.nextInt(s.nodes - 3);
                if (s.messy && i % 50 == 0) b = a;
                // A tidy symmetric file lists every pair once each way.
                if (!s.messy && !pairs.add((long) Math.min(a, b) << 32 | Math.max(a, b))) continue;
                written += line(w, a, b, s.bothDirections && a != b);
                if (s.messy && i % 37 == 0) written += line(w, a, b, s.bothDirections && a != b);
                if (s.messy && i % 41 == 0 && !s.bothDirections) written += line(w, b, a, false);
            }
            // The last node has an edge, so that the largest id + 1 is the node count.
            written += line(w, 0, s.nodes - 1, s.bothDirections);
        }
        if (s.counts) {
            text(dir.resolve("raw/num-node-list" + ext), s.gzip, s.nodes + "\n");
            text(dir.resolve("raw/num-edge-list" + ext), s.gzip, written + "\n");
        }
        if (s.features > 0) {
            try (Writer w = open(dir.resolve("raw/node-feat" + ext), s.gzip)) {
                for (int v = 0; v < s.nodes; v++) {
                    for (int j = 0; j < s.features; j++) {
                        w.write((j > 0 ? "," : "") + (float) r.nextGaussian());
                    }
                    w.write('\n');
                }
            }
        }
        if (s.labels) {
            try (Writer w = open(dir.resolve("raw/node-label" + ext), s.gzip)) {
                for (int v = 0; v < s.nodes; v++) w.write((v % 17 == 3 ? "nan" : Integer.toString(r.nextInt(s.classes))) + "\n");
            }
        }
        String[] names = {"train", "valid", "test"};
        Writer[] split = new Writer[3];
        for (int i = 0; i < 3; i++) split[i] = open(dir.resolve("split/rnd/" + names[i] + ext), s.gzip);
        for (int v = 0; v < s.nodes; v++) split[r.nextInt(3)].write(v + "\n");
        for (Writer w : split) w.close();
        return dir;
    }

    private static int line(Writer w, int a, int b, boolean reverse) throws IOException {
        w.write(a + "," + b + "\n");
        if (reverse) w.write(b + "," + a + "\n");
        return reverse ? 2 : 1;
    }

    static Writer open(Path file, boolean gzip) throws IOException {
        Files.createDirectories(file.getParent());
        var out = Files.newOutputStream(file);
        return new BufferedWriter(new OutputStreamWriter(gzip ? new GZIPOutputStream(out) : out, StandardCharsets.US_ASCII), 1 << 16);
    }

    static void text(Path file, boolean gzip, String s) throws IOException {
        try (Writer w = open(file, gzip)) {
            w.write(s);
        }
    }
}
