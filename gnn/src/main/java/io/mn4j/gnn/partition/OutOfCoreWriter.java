package io.mn4j.gnn.partition;

import io.mn4j.gnn.io.NpyStreamWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes the partition directory of an {@link OutOfCoreGraph} in {@link PartitionWriter}'s layout,
 * byte for byte, holding only arrays of one entry per node. Within a partition new ids follow the
 * original ids ({@link NodeOrder#NONE}), so every file of a partition is written front to back in
 * the order of the original ids: node arrays from memory, in-edges from buckets sorted by
 * destination and new source id ({@link KeyBuckets}), features straight from the folder's file.
 */
final class OutOfCoreWriter {
    private static final Logger LOG = LoggerFactory.getLogger(OutOfCoreWriter.class);

    private final OutOfCoreGraph g;
    private final Path dir;
    private final int[] assignment;
    private final int parts;
    private final long[] offsets;
    private final int bufferBytes;

    private OutOfCoreWriter(OutOfCoreGraph g, Path dir, int[] assignment, int parts) {
        this.g = g;
        this.dir = dir;
        this.assignment = assignment;
        this.parts = parts;
        offsets = new long[parts + 1];
        for (int a : assignment) offsets[a + 1]++;
        for (int k = 0; k < parts; k++) offsets[k + 1] += offsets[k];
        bufferBytes = (int) Math.max(1 << 16, Math.min(1 << 20, g.budget / 8 / parts));
    }

    /** See {@link OutOfCoreGraph#write}. */
    static PartitionMetadata write(OutOfCoreGraph g, Path dir, int[] assignment, int parts, String method) throws IOException {
        long t0 = System.nanoTime();
        PartitionStats stats = g.stats(assignment, parts);
        OutOfCoreWriter w = new OutOfCoreWriter(g, dir, assignment, parts);
        Files.createDirectories(dir);
        Files.deleteIfExists(dir.resolve(PartitionMetadata.FILE));
        for (int k = 0; k < parts; k++) {
            Files.createDirectories(w.part(k));
            w.writeNodeArrays(k);
        }
        long t1 = System.nanoTime();
        w.writeColumns(stats.partEdges());
        long t2 = System.nanoTime();
        w.writeFeatures();
        long[] nodesPer = new long[parts];
        for (int k = 0; k < parts; k++) nodesPer[k] = w.offsets[k + 1] - w.offsets[k];
        boolean features = g.featureWidth > 0;
        PartitionMetadata m = new PartitionMetadata(PartitionMetadata.FORMAT_VERSION, parts, g.n, g.numEdges(), g.featureWidth,
                features ? "float32" : "none", g.numClasses, g.labels != null, true, false, method, g.seed, stats.edgeCut(),
                stats.totalCommVolume(), nodesPer, stats.partEdges(), w.offsets.clone());
        m.write(dir);
        LOG.info("wrote {} partitions to {}: nodes {} s, edges {} s, features {} s; {}", parts, dir, OutOfCoreGraph.seconds(t0, t1),
                OutOfCoreGraph.seconds(t1, t2), OutOfCoreGraph.seconds(t2, System.nanoTime()), stats);
        return m;
    }

    private Path part(int k) {
        return dir.resolve(PartitionWriter.partDir(k));
    }

    /** node_ids, rowptr, labels and masks of partition {@code k}: one pass over the nodes. */
    private void writeNodeArrays(int k) throws IOException {
        long nk = offsets[k + 1] - offsets[k];
        Path pd = part(k);
        boolean labels = g.labels != null;
        NpyStreamWriter ids = NpyStreamWriter.open(pd.resolve("node_ids.npy"), ScalarType.Long, bufferBytes, nk);
        NpyStreamWriter rowptr = NpyStreamWriter.open(pd.resolve("rowptr.npy"), ScalarType.Long, bufferBytes, nk + 1);
        NpyStreamWriter y = labels ? NpyStreamWriter.open(pd.resolve("labels.npy"), ScalarType.Long, bufferBytes, nk) : null;
        NpyStreamWriter[] masks = new NpyStreamWriter[3];
        String[] names = {"train_mask.npy", "val_mask.npy", "test_mask.npy"};
        for (int i = 0; i < 3; i++) masks[i] = NpyStreamWriter.open(pd.resolve(names[i]), ScalarType.Bool, bufferBytes, nk);
        try (ids; rowptr; y; NpyStreamWriter m0 = masks[0]; NpyStreamWriter m1 = masks[1]; NpyStreamWriter m2 = masks[2]) {
            long end = 0;
            rowptr.writeLong(0);
            for (int v = 0; v < g.n; v++) {
                if (assignment[v] != k) continue;
                ids.writeLong(v);
                end += g.degree[v];
                rowptr.writeLong(end);
                if (labels) y.writeLong(g.labels[v]);
                for (int i = 0; i < 3; i++) masks[i].writeBooleans(g.masks[i], v, 1);
            }
        }
    }

    /**
     * col of every partition: the neighbours of each node as new ids, spread into buckets by node
     * and sorted there by (node, new id), then appended to the node's partition in node order.
     */
    private void writeColumns(long[] partEdges) throws IOException {
        int[] newId = new int[g.n];
        long[] next = offsets.clone();
        for (int v = 0; v < g.n; v++) newId[v] = (int) next[assignment[v]]++;
        NpyStreamWriter[] col = new NpyStreamWriter[parts];
        boolean done = false;
        try (KeyBuckets buckets = new KeyBuckets(g.temp, "in-edges", g.n, g.numEdges(), g.budget)) {
            g.forEachRow((v, nbr, from, to) -> {
                for (int e = from; e < to; e++) add(buckets, ((long) v << 32) | newId[nbr[e]]);
            });
            for (int k = 0; k < parts; k++) {
                col[k] = NpyStreamWriter.open(part(k).resolve("col.npy"), ScalarType.Long, bufferBytes, partEdges[k]);
            }
            buckets.drain((keys, count) -> {
                for (int i = 0; i < count; i++) col[assignment[(int) (keys[i] >>> 32)]].writeLong(keys[i] & 0xffffffffL);
            });
            done = true;
        } catch (UncheckedIOException e) {
            throw e.getCause();
        } finally {
            closeAll(col, done);
        }
    }

    private static void add(KeyBuckets buckets, long key) {
        try {
            buckets.add(key);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** features of every partition, streamed from the folder's feature file in node order. */
    private void writeFeatures() throws IOException {
        int f = g.featureWidth;
        if (f == 0) return;
        NpyStreamWriter[] x = new NpyStreamWriter[parts];
        boolean done = false;
        try {
            for (int k = 0; k < parts; k++) {
                x[k] = NpyStreamWriter.open(part(k).resolve("features.npy"), ScalarType.Float, bufferBytes, offsets[k + 1] - offsets[k], f);
            }
            int[] v = {0};
            g.folder.forEachFeatureBlock(g.n, (block, count, width) -> {
                for (int at = 0; at < count; at += width) x[assignment[v[0]++]].writeFloats(block, at, width);
            });
            done = true;
        } finally {
            closeAll(x, done);
        }
    }

    /**
     * Closes every writer opened; after a complete write ({@code check}) throws the first failure,
     * else (a failure is on its way already) ignores them.
     */
    private static void closeAll(NpyStreamWriter[] writers, boolean check) throws IOException {
        Exception first = null;
        for (NpyStreamWriter w : writers) {
            if (w == null) continue;
            try {
                w.close();
            } catch (IOException | RuntimeException e) {
                if (first == null) first = e;
            }
        }
        if (!check || first == null) return;
        if (first instanceof IOException io) throw io;
        throw (RuntimeException) first;
    }
}
