package io.mn4j.gnn.graph;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.IntStream;
import java.util.zip.Deflater;
import java.util.zip.GZIPOutputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes {@link SyntheticGraphs#plantedPartition}'s graph as an OGB node-property folder
 * ({@link io.mn4j.gnn.io.OgbNodeReader}'s layout), drawing it chunk by chunk with the same
 * generators, so that the edge list is never held: memory O(nodes) plus a few chunks of text.
 *
 * <p>Each edge a node starts is one line {@code u,v} of {@code raw/edge.csv.gz}, as
 * {@code ogbn-products} stores its undirected edges once (repeats of a pair, drawn from both ends
 * or twice, stay: the reader's symmetrization merges them). Features are written as the shortest
 * decimals that read back as the same floats, labels as integers, and the split as
 * {@code split/random/}. Read back and symmetrized, as the programs do, the folder gives exactly
 * the graph {@code plantedPartition} builds in memory: the same edges, features, labels and masks;
 * the class count is the largest label + 1 unless declared, which is {@code classes} unless a
 * class has no node.
 */
public final class SyntheticOgbWriter {
    private static final Logger LOG = LoggerFactory.getLogger(SyntheticOgbWriter.class);
    /** Name of the split folder written. */
    public static final String SPLIT = "random";

    private SyntheticOgbWriter() {
    }

    /**
     * Writes the folder (see {@link SyntheticGraphs#plantedPartition} for the parameters).
     *
     * @return the number of edge lines written
     */
    public static long write(Path dir, long nodes, double avgDegree, int classes, int featureSize, long seed, SyntheticGraphs.Options o)
            throws IOException {
        int n = SyntheticGraphs.checkedNodes(nodes, avgDegree, classes, featureSize);
        int chunks = (n + SyntheticGraphs.CHUNK - 1) / SyntheticGraphs.CHUNK;
        long t0 = System.nanoTime();
        SyntheticGraphs.Classes cls = SyntheticGraphs.drawClasses(n, classes, seed, chunks);
        Path raw = dir.resolve("raw");
        Files.createDirectories(raw);
        long lines = writeChunks(raw.resolve("edge.csv.gz"), chunks, ch -> edgeText(cls, avgDegree, o.homophily, seed, ch));
        long t1 = System.nanoTime();
        if (featureSize > 0) {
            float[][] mu = SyntheticGraphs.classMeans(classes, featureSize, o, seed);
            writeChunks(raw.resolve("node-feat.csv.gz"), chunks, ch -> featureText(SyntheticGraphs.chunkFeatures(cls, mu, featureSize, o, seed, ch),
                    featureSize));
        }
        long t2 = System.nanoTime();
        text(raw.resolve("num-node-list.csv.gz"), n + "\n");
        text(raw.resolve("num-edge-list.csv.gz"), lines + "\n");
        writeChunks(raw.resolve("node-label.csv.gz"), chunks, ch -> labelText(cls.label(), ch));
        boolean[][] split = SyntheticGraphs.split(n, o, seed);
        List<String> names = List.of("train", "valid", "test");
        Path splitDir = dir.resolve("split").resolve(SPLIT);
        Files.createDirectories(splitDir);
        for (int i = 0; i < 3; i++) {
            boolean[] m = split[i];
            writeChunks(splitDir.resolve(names.get(i) + ".csv.gz"), chunks, ch -> maskText(m, ch));
        }
        LOG.info("wrote {}: {} nodes, {} edge lines in {} s, features in {} s, the rest in {} s", dir, n, lines,
                String.format("%.1f", (t1 - t0) / 1e9), String.format("%.1f", (t2 - t1) / 1e9), String.format("%.1f", (System.nanoTime() - t2) / 1e9));
        return lines;
    }

    /** The text of one chunk of a file, and what it counts (lines of edges). */
    private record Text(byte[] bytes, long lines) {
    }

    private interface ChunkText {
        Text of(int ch);
    }

    /**
     * Writes a gzip file of the chunks' texts in order; a few chunks are formatted at once, in
     * parallel, so that formatting keeps up with compression. Returns the lines counted.
     */
    private static long writeChunks(Path file, int chunks, ChunkText text) throws IOException {
        int batch = Math.max(2, Runtime.getRuntime().availableProcessors());
        long lines = 0;
        try (OutputStream out = gzip(file)) {
            for (int from = 0; from < chunks; from += batch) {
                Text[] texts = IntStream.range(from, Math.min(chunks, from + batch)).parallel().mapToObj(text::of).toArray(Text[]::new);
                for (Text t : texts) {
                    out.write(t.bytes);
                    lines += t.lines;
                }
            }
        }
        return lines;
    }

    /** A gzip stream at the fastest level: the files are large, and read far more often than their size matters. */
    private static OutputStream gzip(Path file) throws IOException {
        OutputStream raw = new BufferedOutputStream(Files.newOutputStream(file), 1 << 16);
        return new GZIPOutputStream(raw, 1 << 16) {
            {
                def.setLevel(Deflater.BEST_SPEED);
            }
        };
    }

    private static void text(Path file, String s) throws IOException {
        try (OutputStream out = gzip(file)) {
            out.write(s.getBytes(StandardCharsets.US_ASCII));
        }
    }

    /** The edges the nodes of chunk {@code ch} start, one {@code u,v} line each (self loops, which the graph drops, left out). */
    private static Text edgeText(SyntheticGraphs.Classes cls, double avgDegree, double homophily, long seed, int ch) {
        int n = cls.label().length;
        int[] counts = SyntheticGraphs.stubCounts(n, avgDegree, seed, ch);
        int[] targets = SyntheticGraphs.chunkTargets(cls, homophily, seed, ch, counts);
        StringBuilder sb = new StringBuilder(targets.length * 16);
        long lines = 0;
        for (int i = 0, k = 0; i < counts.length; i++) {
            int u = ch * SyntheticGraphs.CHUNK + i;
            for (int j = 0; j < counts[i]; j++) {
                int v = targets[k++];
                if (v == u) continue;
                sb.append(u).append(',').append(v).append('\n');
                lines++;
            }
        }
        return new Text(sb.toString().getBytes(StandardCharsets.US_ASCII), lines);
    }

    private static Text featureText(float[] x, int f) {
        StringBuilder sb = new StringBuilder(x.length * 12);
        for (int p = 0; p < x.length; p++) {
            sb.append(x[p]).append(p % f == f - 1 ? '\n' : ',');
        }
        return new Text(sb.toString().getBytes(StandardCharsets.US_ASCII), 0);
    }

    private static Text labelText(int[] label, int ch) {
        StringBuilder sb = new StringBuilder();
        for (int v = ch * SyntheticGraphs.CHUNK, end = Math.min(label.length, v + SyntheticGraphs.CHUNK); v < end; v++) {
            sb.append(label[v]).append('\n');
        }
        return new Text(sb.toString().getBytes(StandardCharsets.US_ASCII), 0);
    }

    private static Text maskText(boolean[] mask, int ch) {
        StringBuilder sb = new StringBuilder();
        for (int v = ch * SyntheticGraphs.CHUNK, end = Math.min(mask.length, v + SyntheticGraphs.CHUNK); v < end; v++) {
            if (mask[v]) sb.append(v).append('\n');
        }
        return new Text(sb.toString().getBytes(StandardCharsets.US_ASCII), 0);
    }
}
