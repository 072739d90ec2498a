package io.mn4j.gnn.graph;

import io.mn4j.tensor.Tensors;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Synthetic graphs that need no download.
 *
 * <p>{@link #plantedPartition} draws a planted-partition graph (a stochastic block model with
 * equal-probability classes): every node gets a uniformly random class; every node starts
 * {@code avgDegree/2} undirected edges on average (the integer part, plus one more with
 * probability equal to the fractional part); each edge goes to a uniformly random node of the same
 * class with probability {@code homophily}, else to a uniformly random node of another class.
 * Edges are stored in both directions, self loops and duplicate edges are dropped, so the mean
 * degree is slightly below {@code avgDegree} when collisions occur (rare for large graphs).
 * Features are the class mean plus Gaussian noise: {@code x_i = mu_class(i) + noise * N(0, I)},
 * with class means drawn from {@code N(0, signal^2 I)}. The default split is a random 10% train,
 * 10% validation, 80% test.
 *
 * <p>Everything is drawn from the seed in fixed-size chunks with independent generators, so the
 * result does not depend on the number of threads. Edges and features are generated into
 * primitive arrays and tensor memory (no object per edge); a million nodes with average degree 16
 * take about a second.
 */
public final class SyntheticGraphs {
    private static final Logger LOG = LoggerFactory.getLogger(SyntheticGraphs.class);
    /** Nodes drawn by one generator. */
    static final int CHUNK = 1 << 15;

    private SyntheticGraphs() {}

    /** Parameters of {@link #plantedPartition} beyond size and seed; defaults as in the class comment. */
    public static final class Options {
        double homophily = 0.8;
        double signal = 0.15;
        double noise = 1.0;
        double trainFraction = 0.1;
        double valFraction = 0.1;

        /** Defaults: homophily 0.8, feature signal 0.15, noise 1.0, split 10%/10%/80%. */
        public Options() {}

        /** Probability that an edge stays inside its start node's class (default 0.8). */
        public Options homophily(double h) {
            if (h < 0 || h > 1) throw new IllegalArgumentException("homophily must be in [0,1]: " + h);
            this.homophily = h;
            return this;
        }

        /** Standard deviation of the class-mean entries (default 0.15). */
        public Options signal(double s) {
            this.signal = s;
            return this;
        }

        /** Standard deviation of the per-node feature noise (default 1.0). */
        public Options noise(double s) {
            this.noise = s;
            return this;
        }

        /** Fractions of nodes in the train and validation masks; the rest is test (default 0.1, 0.1). */
        public Options split(double train, double val) {
            if (train < 0 || val < 0 || train + val > 1) throw new IllegalArgumentException("bad split " + train + "/" + val);
            this.trainFraction = train;
            this.valFraction = val;
            return this;
        }
    }

    /** A planted-partition graph with default {@link Options}. */
    public static Graph plantedPartition(long nodes, double avgDegree, int classes, int featureSize, long seed) {
        return plantedPartition(nodes, avgDegree, classes, featureSize, seed, new Options());
    }

    /**
     * A planted-partition graph (see the class comment).
     *
     * @param nodes number of nodes (below 2^31)
     * @param avgDegree mean number of neighbours per node (each undirected edge counts for both ends)
     * @param classes number of classes, at least 1
     * @param featureSize feature dimension, at least 0 (0 means no features)
     * @param seed the whole graph is a function of this seed and the parameters
     */
    public static Graph plantedPartition(long nodes, double avgDegree, int classes, int featureSize, long seed, Options o) {
        int n = checkedNodes(nodes, avgDegree, classes, featureSize);
        int chunks = (n + CHUNK - 1) / CHUNK;
        long t0 = System.nanoTime();
        Classes cls = drawClasses(n, classes, seed, chunks);
        long t1 = System.nanoTime();
        Stubs stubs = drawEdges(cls, avgDegree, o.homophily, seed, chunks);
        long t2 = System.nanoTime();
        SymmetricRows rows = symmetricRows(stubs, chunks);
        long t3 = System.nanoTime();
        try (PointerScope scope = new PointerScope()) {
            Csr a = adjacency(rows, chunks);
            Graph.Builder b = Graph.builder(a);
            long t4 = System.nanoTime();
            if (featureSize > 0) {
                b.features(features(cls, featureSize, o, seed, chunks));
            }
            b.labels(Tensors.longs(cls.label)).numClasses(classes);
            boolean[][] split = split(n, o, seed);
            b.masks(Tensors.bools(split[0]), Tensors.bools(split[1]), Tensors.bools(split[2]));
            Graph g = b.build();
            a.close();
            LOG.debug("planted partition {}: classes {} ms, edges {} ms, CSR {} ms, tensors {} ms, features and split {} ms", g, (t1 - t0) / 1_000_000,
                    (t2 - t1) / 1_000_000, (t3 - t2) / 1_000_000, (t4 - t3) / 1_000_000, (System.nanoTime() - t4) / 1_000_000);
            return g;
        }
    }

    /** Checks the parameters of {@link #plantedPartition}; returns the node count. */
    static int checkedNodes(long nodes, double avgDegree, int classes, int featureSize) {
        int n = Csr.checkedSize(nodes, "nodes");
        if (classes < 1) throw new IllegalArgumentException("classes must be >= 1: " + classes);
        if (avgDegree < 0 || (n <= 1 && avgDegree > 0)) throw new IllegalArgumentException("bad average degree " + avgDegree + " for " + n + " nodes");
        if (featureSize < 0) throw new IllegalArgumentException("featureSize must be >= 0");
        return n;
    }

    /** Every node's class, and the nodes of class c, {@code members[start[c] .. start[c+1])}, in node order. */
    record Classes(int count, int[] label, int[] start, int[] members) {
    }

    /** The edges each node starts: node u's targets are {@code target[start[u] .. start[u+1])}. */
    private record Stubs(long[] start, int[] target) {
    }

    /** The sorted, distinct neighbours of every node, per chunk of nodes, with the row pointers. */
    private record SymmetricRows(long[] rowptr, int[][] rowsOfChunk) {
    }

    /** Step 1: classes, and the members of each class. */
    static Classes drawClasses(int n, int classes, long seed, int chunks) {
        int[] label = new int[n];
        IntStream.range(0, chunks).parallel().forEach(ch -> {
            SplittableRandom r = rng(seed, 1, ch);
            for (int i = ch * CHUNK, end = Math.min(n, i + CHUNK); i < end; i++) label[i] = r.nextInt(classes);
        });
        int[] classStart = new int[classes + 1];
        for (int c : label) classStart[c + 1]++;
        for (int c = 0; c < classes; c++) classStart[c + 1] += classStart[c];
        int[] members = new int[n];
        int[] next = Arrays.copyOf(classStart, classes);
        for (int i = 0; i < n; i++) members[next[label[i]]++] = i;
        return new Classes(classes, label, classStart, members);
    }

    /** Step 2: the number of edges each node starts, then the edges themselves. */
    private static Stubs drawEdges(Classes cls, double avgDegree, double homophily, long seed, int chunks) {
        int n = cls.label.length;
        long[] stubStart = new long[n + 1];
        IntStream.range(0, chunks).parallel().forEach(ch -> {
            int[] c = stubCounts(n, avgDegree, seed, ch);
            for (int i = 0; i < c.length; i++) stubStart[ch * CHUNK + i + 1] = c[i];
        });
        for (int i = 0; i < n; i++) stubStart[i + 1] += stubStart[i];
        long m = stubStart[n];
        if (2 * m > Integer.MAX_VALUE - 8) throw new IllegalArgumentException("too many edges for one process: " + 2 * m);
        int[] target = new int[(int) m];
        IntStream.range(0, chunks).parallel().forEach(ch -> {
            int first = ch * CHUNK, end = Math.min(n, first + CHUNK);
            int[] counts = new int[end - first];
            for (int u = first; u < end; u++) counts[u - first] = (int) (stubStart[u + 1] - stubStart[u]);
            int[] t = chunkTargets(cls, homophily, seed, ch, counts);
            System.arraycopy(t, 0, target, (int) stubStart[first], t.length);
        });
        return new Stubs(stubStart, target);
    }

    /** How many edges each node of chunk {@code ch} starts: {@code avgDegree / 2} on average. */
    static int[] stubCounts(int n, double avgDegree, long seed, int ch) {
        double half = avgDegree / 2.0;
        int base = (int) Math.floor(half);
        double frac = half - base;
        SplittableRandom r = rng(seed, 2, ch);
        int first = ch * CHUNK;
        int[] c = new int[Math.min(n, first + CHUNK) - first];
        for (int i = 0; i < c.length; i++) c[i] = base + (r.nextDouble() < frac ? 1 : 0);
        return c;
    }

    /** The other ends of the edges the nodes of chunk {@code ch} start, {@code counts[i]} for its i-th node, node after node. */
    static int[] chunkTargets(Classes cls, double homophily, long seed, int ch, int[] counts) {
        SplittableRandom r = rng(seed, 3, ch);
        int total = 0;
        for (int c : counts) total += c;
        int[] t = new int[total];
        int k = 0;
        for (int i = 0; i < counts.length; i++) {
            for (int j = 0; j < counts[i]; j++) t[k++] = drawTarget(cls, ch * CHUNK + i, homophily, r);
        }
        return t;
    }

    /** The other end of an edge from u: a node of u's class with probability {@code homophily}, else of another class. */
    private static int drawTarget(Classes cls, int u, double homophily, SplittableRandom r) {
        int n = cls.label.length;
        int c = cls.label[u];
        int cs = cls.start[c], csize = cls.start[c + 1] - cs;
        boolean othersExist = cls.count > 1 && cls.start[cls.count] > 0 && csize < n;
        int v;
        boolean inside = !othersExist || r.nextDouble() < homophily;
        do {
            if (inside) {
                v = csize > 1 ? cls.members[cs + r.nextInt(csize)] : u;
                if (csize <= 1) break;
            } else {
                v = r.nextInt(n);
            }
        } while (v == u || (!inside && cls.label[v] == c));
        return v;
    }

    /**
     * Step 3: symmetric rows. Row u already holds the targets of its own edges; the reverse
     * entries are their transpose, scattered in parallel by ranges of destination rows (each task
     * scans all edges in order, so the result does not depend on the number of tasks). Then each
     * row's union is sorted and deduplicated.
     */
    private static SymmetricRows symmetricRows(Stubs stubs, int chunks) {
        int n = stubs.start.length - 1;
        long[] stubStart = stubs.start;
        int[] target = stubs.target;
        int tasks = Math.max(1, Math.min(chunks, Runtime.getRuntime().availableProcessors()));
        long[] revStart = new long[n + 1];
        IntStream.range(0, tasks).parallel().forEach(t -> {
            int lo = (int) ((long) n * t / tasks), hi = (int) ((long) n * (t + 1) / tasks);
            for (int u = 0; u < n; u++) {
                for (long k = stubStart[u]; k < stubStart[u + 1]; k++) {
                    int v = target[(int) k];
                    if (v >= lo && v < hi && v != u) revStart[v + 1]++;
                }
            }
        });
        for (int i = 0; i < n; i++) revStart[i + 1] += revStart[i];
        int[] rev = new int[(int) revStart[n]];
        IntStream.range(0, tasks).parallel().forEach(t -> {
            int lo = (int) ((long) n * t / tasks), hi = (int) ((long) n * (t + 1) / tasks);
            long[] fill = Arrays.copyOfRange(revStart, lo, hi);
            for (int u = 0; u < n; u++) {
                for (long k = stubStart[u]; k < stubStart[u + 1]; k++) {
                    int v = target[(int) k];
                    if (v >= lo && v < hi && v != u) rev[(int) fill[v - lo]++] = u;
                }
            }
        });
        return unionRows(stubs, revStart, rev, chunks);
    }

    /** Each row's own targets and reverse entries, sorted and deduplicated, per chunk. */
    private static SymmetricRows unionRows(Stubs stubs, long[] revStart, int[] rev, int chunks) {
        int n = stubs.start.length - 1;
        long[] stubStart = stubs.start;
        int[] target = stubs.target;
        int[][] rowsOfChunk = new int[chunks][];
        long[] rowptr = new long[n + 1];
        IntStream.range(0, chunks).parallel().forEach(ch -> {
            int first = ch * CHUNK, end = Math.min(n, first + CHUNK);
            int[] buf = new int[(int) (stubStart[end] - stubStart[first] + revStart[end] - revStart[first])];
            int p = 0;
            for (int i = first; i < end; i++) {
                int from = p;
                for (long k = stubStart[i]; k < stubStart[i + 1]; k++) if (target[(int) k] != i) buf[p++] = target[(int) k];
                for (long k = revStart[i]; k < revStart[i + 1]; k++) buf[p++] = rev[(int) k];
                Arrays.sort(buf, from, p);
                int q = from;
                for (int k = from; k < p; k++) if (k == from || buf[k] != buf[k - 1]) buf[q++] = buf[k];
                p = q;
                rowptr[i + 1] = q - from;
            }
            rowsOfChunk[ch] = Arrays.copyOf(buf, p);
        });
        for (int i = 0; i < n; i++) rowptr[i + 1] += rowptr[i];
        return new SymmetricRows(rowptr, rowsOfChunk);
    }

    /** Step 4: the CSR matrix, its columns copied chunk by chunk straight into tensor memory. */
    private static Csr adjacency(SymmetricRows rows, int chunks) {
        long[] rowptr = rows.rowptr;
        int n = rowptr.length - 1;
        Tensor col = Tensors.empty(ScalarType.Long, rowptr[n]);
        if (rowptr[n] > 0) {
            LongPointer cp = new LongPointer(col.data_ptr());
            IntStream.range(0, chunks).parallel().forEach(ch -> {
                int[] chunkRows = rows.rowsOfChunk[ch];
                long[] buf = new long[chunkRows.length];
                for (int k = 0; k < chunkRows.length; k++) buf[k] = chunkRows[k];
                new LongPointer(cp).position(rowptr[ch * CHUNK]).put(buf, 0, buf.length);
            });
        }
        return Csr.of(n, n, Tensors.longs(rowptr), col, null);
    }

    /** Step 5: features, class mean plus noise, drawn per chunk straight into tensor memory. */
    private static Tensor features(Classes cls, int f, Options o, long seed, int chunks) {
        int n = cls.label.length;
        float[][] mu = classMeans(cls.count, f, o, seed);
        Tensor x = Tensors.empty(ScalarType.Float, n, f);
        if (n > 0) {
            FloatPointer xp = new FloatPointer(x.data_ptr());
            IntStream.range(0, chunks).parallel().forEach(ch -> {
                float[] buf = chunkFeatures(cls, mu, f, o, seed, ch);
                new FloatPointer(xp).position((long) ch * CHUNK * f).put(buf, 0, buf.length);
            });
        }
        return x;
    }

    /** Each class's feature mean, drawn from {@code N(0, signal^2 I)}. */
    static float[][] classMeans(int classes, int f, Options o, long seed) {
        float[][] mu = new float[classes][f];
        SplittableRandom mr = rng(seed, 4, 0);
        for (float[] row : mu) for (int k = 0; k < f; k++) row[k] = (float) (o.signal * mr.nextGaussian());
        return mu;
    }

    /** The features of the nodes of chunk {@code ch}, row after row: class mean plus noise. */
    static float[] chunkFeatures(Classes cls, float[][] mu, int f, Options o, long seed, int ch) {
        int n = cls.label.length;
        SplittableRandom r = rng(seed, 5, ch);
        int first = ch * CHUNK, end = Math.min(n, first + CHUNK);
        float[] buf = new float[(end - first) * f];
        for (int i = first, p = 0; i < end; i++) {
            float[] mean = mu[cls.label[i]];
            for (int k = 0; k < f; k++) buf[p++] = mean[k] + (float) (o.noise * r.nextGaussian());
        }
        return buf;
    }

    /** The train, validation and test masks. */
    static boolean[][] split(int n, Options o, long seed) {
        return Graph.randomSplit(n, o.trainFraction, o.valFraction, mixSeed(seed, 6, 0));
    }

    private static SplittableRandom rng(long seed, int stream, int chunk) {
        return new SplittableRandom(mixSeed(seed, stream, chunk));
    }

    private static long mixSeed(long seed, int stream, int chunk) {
        long z = seed * 0x9E3779B97F4A7C15L + stream * 0xBF58476D1CE4E5B9L + chunk * 0x94D049BB133111EBL;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
