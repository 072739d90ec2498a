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
    private static final int CHUNK = 1 << 15;

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
        int n = Csr.checkedSize(nodes, "nodes");
        if (classes < 1) throw new IllegalArgumentException("classes must be >= 1: " + classes);
        if (avgDegree < 0 || (n <= 1 && avgDegree > 0)) throw new IllegalArgumentException("bad average degree " + avgDegree + " for " + n + " nodes");
        if (featureSize < 0) throw new IllegalArgumentException("featureSize must be >= 0");
        int chunks = (n + CHUNK - 1) / CHUNK;
        long t0 = System.nanoTime();

        // 1. Classes, and the members of each class.
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

        long t1 = System.nanoTime();
        // 2. Number of edges each node starts, then the edges themselves.
        double half = avgDegree / 2.0;
        int base = (int) Math.floor(half);
        double frac = half - base;
        long[] stubStart = new long[n + 1];
        IntStream.range(0, chunks).parallel().forEach(ch -> {
            SplittableRandom r = rng(seed, 2, ch);
            for (int i = ch * CHUNK, end = Math.min(n, i + CHUNK); i < end; i++) stubStart[i + 1] = base + (r.nextDouble() < frac ? 1 : 0);
        });
        for (int i = 0; i < n; i++) stubStart[i + 1] += stubStart[i];
        long m = stubStart[n];
        if (2 * m > Integer.MAX_VALUE - 8) throw new IllegalArgumentException("too many edges for one process: " + 2 * m);
        int[] target = new int[(int) m];
        final boolean anyOther = classes > 1 && classStart[classes] > 0;
        IntStream.range(0, chunks).parallel().forEach(ch -> {
            SplittableRandom r = rng(seed, 3, ch);
            for (int u = ch * CHUNK, end = Math.min(n, u + CHUNK); u < end; u++) {
                int c = label[u];
                int cs = classStart[c], csize = classStart[c + 1] - cs;
                boolean othersExist = anyOther && csize < n;
                for (long k = stubStart[u]; k < stubStart[u + 1]; k++) {
                    int v;
                    boolean inside = !othersExist || r.nextDouble() < o.homophily;
                    do {
                        if (inside) {
                            v = csize > 1 ? members[cs + r.nextInt(csize)] : u;
                            if (csize <= 1) break;
                        } else {
                            v = r.nextInt(n);
                        }
                    } while (v == u || (!inside && label[v] == c));
                    target[(int) k] = v;
                }
            }
        });

        long t2 = System.nanoTime();
        // 3. Symmetric CSR. Row u already holds the targets of its own edges (a forward CSR with
        // row pointers stubStart); the reverse entries are its transpose, scattered in parallel by
        // ranges of destination rows (each task scans all edges in order, so the result does not
        // depend on the number of tasks). Then each row's union is sorted and deduplicated.
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
        long t3 = System.nanoTime();
        try (PointerScope scope = new PointerScope()) {
            Tensor col = Tensors.empty(ScalarType.Long, rowptr[n]);
            if (rowptr[n] > 0) {
                LongPointer cp = new LongPointer(col.data_ptr());
                IntStream.range(0, chunks).parallel().forEach(ch -> {
                    int[] rows = rowsOfChunk[ch];
                    long[] buf = new long[rows.length];
                    for (int k = 0; k < rows.length; k++) buf[k] = rows[k];
                    new LongPointer(cp).position(rowptr[ch * CHUNK]).put(buf, 0, buf.length);
                });
            }
            Csr a = Csr.of(n, n, Tensors.longs(rowptr), col, null);
            Graph.Builder b = Graph.builder(a);

            long t4 = System.nanoTime();
            // 4. Features: class mean plus noise, drawn per chunk straight into tensor memory.
            if (featureSize > 0) {
                int f = featureSize;
                float[][] mu = new float[classes][f];
                SplittableRandom mr = rng(seed, 4, 0);
                for (float[] row : mu) for (int k = 0; k < f; k++) row[k] = (float) (o.signal * mr.nextGaussian());
                Tensor x = Tensors.empty(ScalarType.Float, n, f);
                if (n > 0) {
                    FloatPointer xp = new FloatPointer(x.data_ptr());
                    IntStream.range(0, chunks).parallel().forEach(ch -> {
                        SplittableRandom r = rng(seed, 5, ch);
                        int first = ch * CHUNK, end = Math.min(n, first + CHUNK);
                        float[] buf = new float[(end - first) * f];
                        for (int i = first, p = 0; i < end; i++) {
                            float[] mean = mu[label[i]];
                            for (int k = 0; k < f; k++) buf[p++] = mean[k] + (float) (o.noise * r.nextGaussian());
                        }
                        new FloatPointer(xp).position((long) first * f).put(buf, 0, buf.length);
                    });
                }
                b.features(x);
            }
            b.labels(Tensors.longs(label)).numClasses(classes);
            boolean[][] split = Graph.randomSplit(n, o.trainFraction, o.valFraction, mixSeed(seed, 6, 0));
            b.masks(Tensors.bools(split[0]), Tensors.bools(split[1]), Tensors.bools(split[2]));
            Graph g = b.build();
            a.close();
            LOG.debug("planted partition {}: classes {} ms, edges {} ms, CSR {} ms, tensors {} ms, features and split {} ms", g, (t1 - t0) / 1_000_000,
                    (t2 - t1) / 1_000_000, (t3 - t2) / 1_000_000, (t4 - t3) / 1_000_000, (System.nanoTime() - t4) / 1_000_000);
            return g;
        }
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
