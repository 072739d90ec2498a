package io.mn4j.gnn.partition;

import io.mn4j.gnn.io.GraphFormatException;
import io.mn4j.gnn.io.OgbFolder;
import io.mn4j.iterators.Permutations;
import io.mn4j.tensor.Tensors;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Locale;
import java.util.stream.Stream;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The graph of an OGB node-property folder, prepared for partitioning without ever holding its
 * edges: memory O(nodes) plus a budget for the edges sorted at once.
 *
 * <p>{@link #open} reads the edge file once and spreads both directions of every edge into
 * temporary bucket files keyed by the node's position in the seeded random order
 * {@link LdgPartitioner} visits nodes in ({@link KeyBuckets}); each bucket is then sorted and
 * written out as the node's neighbours, repeats and self loops dropped, into one adjacency file in
 * that order. That is the graph the in-memory programs partition: the folder read by
 * {@link io.mn4j.gnn.io.OgbNodeReader}, symmetrized, without self loops. A pass of LDG then reads
 * the adjacency file once from start to end, and gives the same assignment as
 * {@link LdgPartitioner} on the graph in memory; {@link #write} writes the same partition directory
 * as {@link PartitionWriter} (nodes in {@link NodeOrder#NONE}), byte for byte.
 *
 * <p>One case differs from the in-memory path and is refused: a file that already holds every edge
 * in both directions is not symmetrized in memory, so an edge listed there twice stays a parallel
 * edge, which this graph, having merged the repeats, cannot reproduce. Temporary files go into a
 * folder of their own under the folder given, deleted by {@link #close()} (and at JVM exit).
 */
public final class OutOfCoreGraph implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(OutOfCoreGraph.class);
    /** Low bit of a bucket key: the entry comes from an edge into the node (else out of it). */
    private static final long IN = 1;

    final OgbFolder folder;
    final long seed;
    final long budget;
    final Path temp;
    private final Thread cleanup;
    final int n;
    private final int[] order;
    final int[] degree;
    private int maxDegree;
    private long numEdges;
    private final Path adjacency;
    final long[] labels;
    final int numClasses;
    final boolean[][] masks;
    final int featureWidth;
    /** The last assignment {@link #stats} counted, and its statistics: the CLI prints them, then {@link #write} records them. */
    private int[] counted;
    private PartitionStats countedStats;

    private OutOfCoreGraph(OgbFolder folder, int declaredClasses, long seed, long budget, Path temp, Thread cleanup) throws IOException {
        this.folder = folder;
        this.seed = seed;
        this.budget = budget;
        this.temp = temp;
        this.cleanup = cleanup;
        long nodes = folder.nodeCount();
        if (nodes > Integer.MAX_VALUE - 8) throw new GraphFormatException(folder.dir() + ": " + nodes + " nodes do not fit a Java array");
        n = (int) nodes;
        order = Permutations.of(n, seed);
        degree = new int[n];
        adjacency = temp.resolve("adjacency.bin");
        buildAdjacency();
        try (PointerScope s = new PointerScope()) {
            Tensor y = folder.labels(n);
            numClasses = y == null ? 0 : folder.classCount(y, declaredClasses);
            labels = y == null ? null : Tensors.toLongArray(y);
        }
        masks = folder.masks(n);
        featureWidth = folder.featureWidth();
    }

    /**
     * Reads the folder's edges into the temporary adjacency file and its labels and split into memory.
     *
     * @param dir the OGB folder (the only split under {@code split/}, or the known dataset's)
     * @param declaredClasses the class count, or -1 for the known dataset's, else the largest label + 1
     * @param seed the seed of the node order, which LDG's passes follow
     * @param memoryBudget bytes for the edges sorted at once (and the buffers of the bucket files)
     * @param tempParent where the folder of temporary files is made
     */
    public static OutOfCoreGraph open(Path dir, int declaredClasses, long seed, long memoryBudget, Path tempParent) throws IOException {
        if (memoryBudget < 64 << 10) throw new IllegalArgumentException("memory budget of " + memoryBudget + " bytes: at least 64 KiB");
        OgbFolder folder = OgbFolder.open(dir, null);
        Files.createDirectories(tempParent);
        Path temp = Files.createTempDirectory(tempParent, "mn4j-partition-");
        // Interrupted runs (Ctrl-C) leave no temporary files either.
        Thread cleanup = new Thread(() -> deleteQuietly(temp), "mn4j-partition-cleanup");
        Runtime.getRuntime().addShutdownHook(cleanup);
        try {
            return new OutOfCoreGraph(folder, declaredClasses, seed, memoryBudget, temp, cleanup);
        } catch (IOException | RuntimeException | Error e) {
            deleteQuietly(temp);
            removeHook(cleanup);
            throw e;
        }
    }

    public long numNodes() { return n; }

    /** Directed edges of the undirected graph (each undirected edge twice). */
    public long numEdges() { return numEdges; }

    /** Feature size (0 without features). */
    public long numFeatures() { return featureWidth; }

    /** Number of classes (0 without labels). */
    public int numClasses() { return numClasses; }

    /** The seed of the node order, which LDG uses as its seed. */
    public long seed() { return seed; }

    /** One pass over the edge file into buckets, then each bucket sorted into the adjacency file. */
    private void buildAdjacency() throws IOException {
        long t0 = System.nanoTime();
        int[] pos = new int[n];
        for (int p = 0; p < n; p++) pos[order[p]] = p;
        long declared = folder.declaredEdges();
        long expected = declared >= 0 ? 2 * declared : estimatedEntries(folder.edgeFile());
        Compactor c = new Compactor();
        try (KeyBuckets buckets = new KeyBuckets(temp, "edges", n, expected, budget)) {
            OgbFolder.EdgeScan scan = folder.forEachEdge((s, d) -> {
                if (Math.max(s, d) >= n) return; // reported by checkEdgeIds after the pass
                buckets.add(((long) pos[(int) d] << 32) | (s << 1) | IN);
                buckets.add(((long) pos[(int) s] << 32) | (d << 1));
            });
            folder.checkEdgeIds(scan, n);
            long t1 = System.nanoTime();
            try (IntFile.Writer w = new IntFile.Writer(adjacency)) {
                c.out = w;
                buckets.drain(c);
            }
            LOG.info("{}: {} edges read into buckets in {} s, sorted into {} undirected entries in {} s", folder.edgeFile(), scan.count(),
                    seconds(t0, t1), numEdges, seconds(t1, System.nanoTime()));
        }
        if (c.symmetric && c.repeatFrom >= 0) {
            throw new IllegalArgumentException(folder.edgeFile() + ": every edge is stored in both directions, and edge " + c.repeatFrom
                    + "," + c.repeatTo + " more than once: read in memory such a graph keeps the repeats as parallel edges, which the "
                    + "out-of-core path cannot; drop the repeated lines, or partition in memory");
        }
    }

    /** Seconds between two {@link System#nanoTime()} readings, to a tenth, for logs. */
    static String seconds(long from, long to) {
        return String.format(Locale.ROOT, "%.1f", (to - from) / 1e9);
    }

    /** A guess of 2 x the lines of an edge file from its size, when {@code num-edge-list} does not give them. */
    private static long estimatedEntries(Path edgeFile) throws IOException {
        long bytes = Files.size(edgeFile) * (edgeFile.toString().endsWith(".gz") ? 4 : 1);
        return 2 * (bytes / 8);
    }

    /** Turns sorted bucket keys into rows of distinct neighbours, and finds whether the file was already symmetric. */
    private final class Compactor implements KeyBuckets.Chunk {
        IntFile.Writer out;
        boolean symmetric = true;
        long repeatFrom = -1, repeatTo = -1;

        @Override
        public void accept(long[] keys, int count) throws IOException {
            int i = 0;
            while (i < count) {
                long p = keys[i] >>> 32;
                int v = order[(int) p];
                int deg = 0;
                while (i < count && keys[i] >>> 32 == p) {
                    long pair = keys[i] >>> 1;
                    int u = (int) (pair & 0x7fffffffL);
                    int ins = 0;
                    boolean outward = false;
                    for (; i < count && keys[i] >>> 1 == pair; i++) {
                        if ((keys[i] & IN) != 0) ins++;
                        else outward = true;
                    }
                    // An edge u -> v without v -> u: the in-memory reader would symmetrize.
                    if (ins > 0 && !outward) symmetric = false;
                    if (u == v) continue;
                    if (ins > 1 && repeatFrom < 0) {
                        repeatFrom = u;
                        repeatTo = v;
                    }
                    out.write(u);
                    deg++;
                }
                degree[v] = deg;
                numEdges += deg;
                maxDegree = Math.max(maxDegree, deg);
            }
        }
    }

    /** Hands every node's neighbours to {@code visit}, in the seeded node order: one read of the adjacency file. */
    void forEachRow(LdgPartitioner.RowVisitor visit) throws IOException {
        int[] row = new int[maxDegree];
        try (IntFile.Reader r = new IntFile.Reader(adjacency)) {
            for (int p = 0; p < n; p++) {
                int v = order[p];
                r.read(row, degree[v]);
                visit.row(v, row, 0, degree[v]);
            }
        }
    }

    /**
     * Partitions the graph: LDG in passes over the adjacency file (with {@code partitioner}'s passes
     * and slack, and this graph's seed), or range or random, which need no edges.
     *
     * @throws IllegalArgumentException for a partitioner that needs the graph in memory (METIS)
     */
    public int[] partition(Partitioner partitioner, int parts) throws IOException {
        Partitioners.checkParts(parts);
        if (partitioner instanceof RangePartitioner) return RangePartitioner.assign(n, parts);
        if (partitioner instanceof RandomPartitioner) return RandomPartitioner.assign(n, parts, seed);
        if (!(partitioner instanceof LdgPartitioner ldg)) {
            throw new IllegalArgumentException("the " + partitioner.name() + " partitioner needs the whole graph in memory; out of core "
                    + "the graph can be partitioned by ldg, range or random");
        }
        try {
            return ldg.partition(n, parts, seed, (nodes, visit) -> {
                if (!Arrays.equals(nodes, order)) throw new IllegalStateException("LDG's node order is not the adjacency file's");
                try {
                    forEachRow(visit);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
    }

    /**
     * Edge cut, balance and communication volume of an assignment, as {@link PartitionStats#compute}
     * gives them in memory: a pass over the adjacency file, made once for the same assignment.
     */
    public PartitionStats stats(int[] assignment, int parts) throws IOException {
        Partitioners.checkParts(parts);
        PartitionStats.checkAssignment(assignment, n, parts);
        if (countedStats != null && countedStats.parts() == parts && Arrays.equals(counted, assignment)) {
            return countedStats; // a pass over the adjacency file saved
        }
        long[] nodes = new long[parts];
        long[] edges = new long[parts];
        long[][] vol = new long[parts][parts];
        long[] cut = {0};
        int[] seen = new int[parts];
        int[] stamp = {0};
        // The graph is symmetric, so the partitions that need node u's row are those of u's neighbours.
        forEachRow((u, nbr, from, to) -> {
            int p = assignment[u];
            nodes[p]++;
            edges[p] += to - from;
            stamp[0]++;
            for (int e = from; e < to; e++) {
                int q = assignment[nbr[e]];
                if (q == p) continue;
                cut[0]++;
                if (seen[q] != stamp[0]) {
                    seen[q] = stamp[0];
                    vol[p][q]++;
                }
            }
        });
        counted = assignment.clone();
        countedStats = PartitionStats.of(parts, n, numEdges, nodes, edges, cut[0], vol);
        return countedStats;
    }

    /**
     * Writes the partition directory of {@code assignment} as {@link PartitionWriter} does with
     * nodes in {@link NodeOrder#NONE}; features stream from the folder.
     *
     * @param method partitioner name recorded in the metadata
     * @return the metadata written
     */
    public PartitionMetadata write(Path dir, int[] assignment, int parts, String method) throws IOException {
        return OutOfCoreWriter.write(this, dir, assignment, parts, method);
    }

    /** Deletes the temporary files. */
    @Override
    public void close() {
        deleteQuietly(temp);
        removeHook(cleanup);
    }

    private static void removeHook(Thread hook) {
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // the JVM is shutting down: the hook runs anyway
        }
    }

    private static void deleteQuietly(Path dir) {
        try {
            if (!Files.exists(dir)) return;
            try (Stream<Path> s = Files.walk(dir)) {
                for (Path p : s.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            LOG.warn("could not delete the temporary files in {}: {}", dir, e.toString());
        }
    }

    @Override
    public String toString() {
        return "OutOfCoreGraph[" + folder.dir() + ", nodes=" + n + ", edges=" + numEdges + ", features=" + featureWidth + ", classes="
                + numClasses + "]";
    }
}
