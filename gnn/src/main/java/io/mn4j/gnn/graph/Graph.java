package io.mn4j.gnn.graph;

import io.mn4j.iterators.Permutations;
import io.mn4j.tensor.Scopes;
import io.mn4j.tensor.Tensors;
import java.util.Arrays;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * A graph with node data, on LibTorch tensors.
 *
 * <p>Structure: {@link #adjacency()} is the CSR of <em>in-edges</em> ({@code numNodes x numNodes}):
 * row {@code i} lists the sources {@code j} of the edges {@code j -> i}, so a message-passing layer
 * computes {@code out[i] = sum over row i of w_e * x[col_e]}. Optional per-edge weights.
 *
 * <p>Node data, each optional (null when absent): {@code features} float32 [n, f], {@code labels}
 * int64 [n], and {@code trainMask}, {@code valMask}, {@code testMask} bool [n].
 *
 * <p>Immutable: the {@code with...}/structural methods return new graphs. A graph holds its own
 * tensor handles (data is shared, not copied, between graphs derived from each other), independent
 * of any {@link PointerScope}; {@link #close()} releases them. Tensors returned by accessors are
 * owned by the graph: do not close them.
 */
public final class Graph implements AutoCloseable {
    /**
     * The label of a node without one: the training loss ignores it (PyTorch's default
     * {@code ignore_index}). Every other label lies in {@code [0, numClasses)}.
     */
    public static final int UNLABELLED = -100;

    private final Csr adj;
    private final Tensor features;
    private final Tensor labels;
    private final Tensor trainMask;
    private final Tensor valMask;
    private final Tensor testMask;
    private final int numClasses;

    private Graph(Builder b) {
        this.adj = Csr.of(b.adj.numRows(), b.adj.numCols(), b.adj.rowptr(), b.adj.col(), b.adj.weight());
        long n = adj.numRows();
        if (adj.numCols() != n) throw new IllegalArgumentException("adjacency must be square, got " + adj);
        checkNodeTensor(b.features, n, "features", 2, ScalarType.Float, ScalarType.Double);
        checkNodeTensor(b.labels, n, "labels", 1, ScalarType.Long);
        checkNodeTensor(b.trainMask, n, "trainMask", 1, ScalarType.Bool);
        checkNodeTensor(b.valMask, n, "valMask", 1, ScalarType.Bool);
        checkNodeTensor(b.testMask, n, "testMask", 1, ScalarType.Bool);
        this.features = Scopes.own(b.features);
        this.labels = Scopes.own(b.labels);
        this.trainMask = Scopes.own(b.trainMask);
        this.valMask = Scopes.own(b.valMask);
        this.testMask = Scopes.own(b.testMask);
        if (b.numClasses >= 0) {
            this.numClasses = b.numClasses;
        } else if (labels != null && labels.numel() > 0) {
            try (PointerScope s = new PointerScope()) {
                this.numClasses = (int) labels.max().item_long() + 1;
            }
        } else {
            this.numClasses = 0;
        }
    }

    /** A builder starting from an in-edge adjacency (the graph takes its own handles on it). */
    public static Builder builder(Csr adjacency) {
        return new Builder(adjacency);
    }

    /**
     * A graph from an edge list: edge {@code k} goes {@code src[k] -> dst[k]}. Duplicates and self
     * loops are kept as given; use {@link #symmetrize()}, {@link #withSelfLoops()} etc. to change them.
     */
    public static Graph fromEdges(long numNodes, long[] src, long[] dst) {
        try (Csr a = Csr.fromCoo(numNodes, numNodes, dst, src, null)) {
            return builder(a).build();
        }
    }

    /** A builder with this graph's adjacency and node data, to change some of them. */
    public Builder toBuilder() {
        return new Builder(adj).features(features).labels(labels).masks(trainMask, valMask, testMask).numClasses(numClasses);
    }

    public long numNodes() { return adj.numRows(); }

    /** Number of directed edges (entries of the in-edge CSR, self loops included). */
    public long numEdges() { return adj.nnz(); }

    /** The CSR of in-edges; owned by the graph. */
    public Csr adjacency() { return adj; }

    /** int64 [n+1] row pointers of the in-edge CSR. */
    public Tensor rowptr() { return adj.rowptr(); }

    /** int64 [numEdges]: source node of each in-edge. */
    public Tensor col() { return adj.col(); }

    /** Per-edge weights [numEdges], or null when unweighted. */
    public Tensor edgeWeight() { return adj.weight(); }

    public Tensor features() { return features; }

    public Tensor labels() { return labels; }

    public Tensor trainMask() { return trainMask; }

    public Tensor valMask() { return valMask; }

    public Tensor testMask() { return testMask; }

    public boolean hasFeatures() { return features != null; }

    public boolean hasLabels() { return labels != null; }

    public boolean hasMasks() { return trainMask != null && valMask != null && testMask != null; }

    /** Feature size f, or 0 without features. */
    public long numFeatures() { return features == null ? 0 : features.size(1); }

    /** Number of classes: given explicitly, else max label + 1, else 0. */
    public int numClasses() { return numClasses; }

    /** In-degree of every node (entries per CSR row), int64 [n]. */
    public Tensor inDegrees() { return adj.rowCounts(); }

    /** Out-degree of every node, int64 [n]. */
    public Tensor outDegrees() { return adj.colCounts(); }

    /** The CSR of out-edges (the transpose of {@link #adjacency()}): row {@code j} lists the destinations of edges leaving {@code j}. */
    public Csr transpose() { return adj.transpose(); }

    /**
     * This graph with a self loop on every node that has none (existing loops are kept), like PyG's
     * {@code add_remaining_self_loops}. New loops get weight 1 in a weighted graph. Within each row
     * the loop is placed after the existing entries.
     */
    public Graph withSelfLoops() {
        long[] rp = adj.rowptrArray();
        int[] c = adj.colArray();
        int n = Csr.checkedSize(numNodes(), "numNodes");
        boolean[] has = new boolean[n];
        int missing = n;
        for (int i = 0; i < n; i++) {
            for (int e = (int) rp[i]; e < rp[i + 1]; e++) {
                if (c[e] == i && !has[i]) { has[i] = true; missing--; }
            }
        }
        long[] nrp = new long[n + 1];
        long[] nc = new long[c.length + missing];
        long[] source = new long[nc.length];
        int p = 0;
        for (int i = 0; i < n; i++) {
            for (int e = (int) rp[i]; e < rp[i + 1]; e++) {
                nc[p] = c[e];
                source[p++] = e;
            }
            if (!has[i]) {
                nc[p] = i;
                source[p++] = -1;
            }
            nrp[i + 1] = p;
        }
        return withStructure(nrp, nc, source);
    }

    /** This graph without self loops (the remaining edges keep their order and weights). */
    public Graph withoutSelfLoops() {
        try (Csr a = adj.withoutDiagonal()) {
            return toBuilder().adjacency(a).build();
        }
    }

    /**
     * The undirected version of this graph: an edge {@code i -> j} for every pair with {@code i -> j}
     * or {@code j -> i} here, each once, sources sorted within each row. Self loops present here are
     * kept (once). The result is unweighted: edge weights here are usually normalisations, which must
     * be recomputed for the new structure.
     */
    public Graph symmetrize() {
        long[] rp = adj.rowptrArray();
        int[] c = adj.colArray();
        int n = Csr.checkedSize(numNodes(), "numNodes");
        long e = c.length;
        if (2 * e > Integer.MAX_VALUE - 8) throw new IllegalArgumentException("graph too large to symmetrize in memory: " + e + " edges");
        // Row i of the union gets its in-edges (c[...]) and the reverse of its out-edges.
        long[] cnt = new long[n + 1];
        for (int i = 0; i < n; i++) {
            cnt[i + 1] += rp[i + 1] - rp[i];
            for (int k = (int) rp[i]; k < rp[i + 1]; k++) cnt[c[k] + 1]++;
        }
        for (int i = 0; i < n; i++) cnt[i + 1] += cnt[i];
        long[] next = Arrays.copyOf(cnt, n);
        int[] u = new int[(int) (2 * e)];
        for (int i = 0; i < n; i++) {
            for (int k = (int) rp[i]; k < rp[i + 1]; k++) {
                u[(int) next[i]++] = c[k];
                u[(int) next[c[k]]++] = i;
            }
        }
        long[] nrp = new long[n + 1];
        int p = 0;
        for (int i = 0; i < n; i++) {
            int from = (int) cnt[i], to = (int) cnt[i + 1];
            Arrays.sort(u, from, to);
            for (int k = from; k < to; k++) {
                if (k > from && u[k] == u[k - 1]) continue;
                u[p++] = u[k];
            }
            nrp[i + 1] = p;
        }
        long[] nc = new long[p];
        for (int k = 0; k < p; k++) nc[k] = u[k];
        return withStructure(nrp, nc, null);
    }

    /** True if for every edge {@code i -> j} the edge {@code j -> i} exists too (weights ignored). */
    public boolean isSymmetric() {
        long[] rp = adj.rowptrArray();
        int[] c = adj.colArray();
        int n = (int) numNodes();
        int[] sorted = c.clone();
        for (int i = 0; i < n; i++) Arrays.sort(sorted, (int) rp[i], (int) rp[i + 1]);
        for (int i = 0; i < n; i++) {
            for (int k = (int) rp[i]; k < rp[i + 1]; k++) {
                int j = sorted[k];
                if (Arrays.binarySearch(sorted, (int) rp[j], (int) rp[j + 1], i) < 0) return false;
            }
        }
        return true;
    }

    /** The same graph with other edge weights ([numEdges] floating point, or null to drop them). */
    public Graph withEdgeWeight(Tensor weight) {
        try (Csr a = adj.withWeight(weight)) {
            return toBuilder().adjacency(a).build();
        }
    }

    /** The same graph with other node features (float32/float64 [n, f], or null). */
    public Graph withFeatures(Tensor newFeatures) {
        return toBuilder().features(newFeatures).build();
    }

    /** The same graph with other labels (int64 [n], or null). */
    public Graph withLabels(Tensor newLabels, int newNumClasses) {
        return toBuilder().labels(newLabels).numClasses(newNumClasses).build();
    }

    /** The same graph with other train/val/test masks (bool [n] each, or null). */
    public Graph withMasks(Tensor train, Tensor val, Tensor test) {
        return toBuilder().masks(train, val, test).build();
    }

    /**
     * The same graph with a random split: a random {@code trainFraction} of the nodes in the train
     * mask, the next {@code valFraction} in the validation mask and the rest in the test mask.
     * Reproducible from {@code seed}.
     */
    public Graph withRandomSplit(double trainFraction, double valFraction, long seed) {
        boolean[][] m = randomSplit(Csr.checkedSize(numNodes(), "numNodes"), trainFraction, valFraction, seed);
        try (PointerScope s = new PointerScope()) {
            return withMasks(Tensors.bools(m[0]), Tensors.bools(m[1]), Tensors.bools(m[2]));
        }
    }

    /**
     * Train/val/test masks over {@code n} nodes: a seeded random permutation, the first
     * {@code round(trainFraction*n)} nodes train, the next {@code round(valFraction*n)} validation,
     * the rest test.
     */
    public static boolean[][] randomSplit(int n, double trainFraction, double valFraction, long seed) {
        if (trainFraction < 0 || valFraction < 0 || trainFraction + valFraction > 1) {
            throw new IllegalArgumentException("bad split fractions train=" + trainFraction + " val=" + valFraction);
        }
        int[] perm = Permutations.of(n, seed);
        int nTrain = (int) Math.round(trainFraction * n);
        int nVal = Math.min(n - nTrain, (int) Math.round(valFraction * n));
        boolean[][] m = new boolean[3][n];
        for (int k = 0; k < n; k++) m[k < nTrain ? 0 : k < nTrain + nVal ? 1 : 2][perm[k]] = true;
        return m;
    }

    /** The same graph with every feature row divided by its sum (rows summing to 0 are kept), like PyG's {@code NormalizeFeatures}. */
    public Graph withRowNormalizedFeatures() {
        if (features == null) throw new IllegalStateException("graph has no features");
        try (PointerScope s = new PointerScope()) {
            Tensor sum = features.sum(new long[] {1}, true, null);
            Tensor safe = sum.masked_fill(sum.eq(new Scalar(0.0)), new Scalar(1.0));
            return withFeatures(features.div(safe));
        }
    }

    /** Releases the graph's tensor handles. */
    @Override
    public void close() {
        adj.close();
        Scopes.closeAll(features, labels, trainMask, valMask, testMask);
    }

    @Override
    public String toString() {
        return "Graph[nodes=" + numNodes() + ", edges=" + numEdges() + ", features=" + numFeatures() + ", classes=" + numClasses
                + (adj.hasWeight() ? ", weighted" : "") + (hasMasks() ? ", split" : "") + "]";
    }

    /**
     * This graph's node data on a new structure. Entry {@code k} of the new structure takes the
     * weight of entry {@code source[k]} here (-1: weight 1), in the weights' own dtype; with
     * {@code source == null} or an unweighted graph the result is unweighted.
     */
    private Graph withStructure(long[] rowptr, long[] col, long[] source) {
        try (PointerScope s = new PointerScope()) {
            Tensor w = null;
            if (source != null && adj.weight() != null) {
                long[] idx = new long[source.length];
                boolean[] fresh = new boolean[source.length];
                for (int k = 0; k < source.length; k++) {
                    fresh[k] = source[k] < 0;
                    idx[k] = fresh[k] ? 0 : source[k];
                }
                w = adj.nnz() == 0 ? Tensors.zeros(Tensors.type(adj.weight()), idx.length)
                        : adj.weight().index_select(0, Tensors.longs(idx));
                w = w.masked_fill(Tensors.bools(fresh), new Scalar(1.0)).contiguous();
            }
            try (Csr a = Csr.of(numNodes(), numNodes(), Tensors.longs(rowptr), Tensors.longs(col), w)) {
                return toBuilder().adjacency(a).build();
            }
        }
    }

    private static void checkNodeTensor(Tensor t, long n, String name, int dim, ScalarType... types) {
        if (t == null) return;
        if (t.dim() != dim || t.size(0) != n) {
            throw new IllegalArgumentException(name + " must have " + dim + " dimension(s) and " + n + " rows, got " + Tensors.shapeString(t));
        }
        if (!Arrays.asList(types).contains(Tensors.type(t))) {
            throw new IllegalArgumentException(name + " must be of type " + Arrays.toString(types) + ", got " + Tensors.type(t));
        }
        if (!t.is_contiguous()) throw new IllegalArgumentException(name + " must be contiguous");
    }

    /** Collects a graph's parts; {@link #build()} validates shapes and types. */
    public static final class Builder {
        private Csr adj;
        private Tensor features, labels, trainMask, valMask, testMask;
        private int numClasses = -1;

        private Builder(Csr adj) {
            this.adj = adj;
        }

        /** The in-edge adjacency (square). */
        public Builder adjacency(Csr a) { this.adj = a; return this; }

        /** float32/float64 [n, f] node features, or null. */
        public Builder features(Tensor t) { this.features = t; return this; }

        /** int64 [n] labels, or null. */
        public Builder labels(Tensor t) { this.labels = t; return this; }

        /** bool [n] masks, each may be null. */
        public Builder masks(Tensor train, Tensor val, Tensor test) {
            this.trainMask = train;
            this.valMask = val;
            this.testMask = test;
            return this;
        }

        /** Number of classes; negative means max label + 1. */
        public Builder numClasses(int c) { this.numClasses = c; return this; }

        /** A new graph with its own handles on the given tensors. */
        public Graph build() { return new Graph(this); }
    }
}
