package io.mn4j.mpitests.gnn;

import io.mn4j.gnn.graph.Csr;
import io.mn4j.gnn.shard.EdgeNorm;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.bytedeco.javacpp.DoublePointer;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/**
 * A random directed graph that every rank builds identically from a seed, cut into contiguous
 * ranges (one per rank, of uneven sizes, possibly empty), with the one-process dense reference
 * of each normalised adjacency.
 *
 * <p>Like graphs read from files, it stores self-loops: every fifth node that is not isolated
 * has one, node 0 two (besides any the random edges make). The references treat them as PyG
 * does: sums and means (SAGE) count every stored edge; GCN ({@code add_remaining_self_loops})
 * and GAT (remove, then add self-loops) give every node exactly one self-loop.
 */
final class RandomPartitionedGraph {
    final int n;
    final long[] src;
    final long[] dst;
    final long[] offsets;

    RandomPartitionedGraph(int n, int edges, int parts, long seed, boolean isolateSome) {
        this.n = n;
        Random rnd = new Random(seed);
        List<long[]> e = new ArrayList<>();
        for (int k = 0; k < edges; k++) {
            long u = rnd.nextInt(n), v = rnd.nextInt(n);
            if (isolateSome && (u % 7 == 3 || v % 7 == 3)) {
                continue; // nodes 3, 10, 17, ... have no edges at all
            }
            e.add(new long[] {u, v});
        }
        for (int v = 0; v < n; v += 5) {
            if (!(isolateSome && v % 7 == 3)) {
                e.add(new long[] {v, v});
            }
        }
        e.add(new long[] {0, 0});
        src = e.stream().mapToLong(a -> a[0]).toArray();
        dst = e.stream().mapToLong(a -> a[1]).toArray();
        offsets = new long[parts + 1];
        // uneven ranges: partition p gets weight p+1 (the last rank owns the most)
        long total = (long) parts * (parts + 1) / 2;
        long acc = 0;
        for (int p = 0; p < parts; p++) {
            acc += p + 1;
            offsets[p + 1] = n * acc / total;
        }
    }

    /** In-edges of the nodes of partition p: rows local, columns global. */
    Csr localInEdges(int p) {
        long lo = offsets[p], hi = offsets[p + 1];
        List<Long> rows = new ArrayList<>(), cols = new ArrayList<>();
        for (int k = 0; k < src.length; k++) {
            if (dst[k] >= lo && dst[k] < hi) {
                rows.add(dst[k] - lo);
                cols.add(src[k]);
            }
        }
        return Csr.fromCoo(hi - lo, n, rows.stream().mapToLong(Long::longValue).toArray(),
                cols.stream().mapToLong(Long::longValue).toArray(), null);
    }

    /** In-edges of every node (one partition holding the whole graph). */
    Csr wholeInEdges() {
        return Csr.fromCoo(n, n, dst.clone(), src.clone(), null);
    }

    /** The dense n×n matrix M with out = M·x for the weighting, in double precision. */
    Tensor dense(EdgeNorm norm) {
        double[] a = new double[n * n];
        double[] indeg = new double[n];
        for (int k = 0; k < src.length; k++) {
            // GCN's normalisation replaces stored self-loops by one of its own.
            if (norm != EdgeNorm.GCN || src[k] != dst[k]) {
                a[(int) (dst[k] * n + src[k])] += 1;
                indeg[(int) dst[k]] += 1;
            }
        }
        for (int v = 0; v < n; v++) {
            for (int u = 0; u < n; u++) {
                double w = a[v * n + u];
                switch (norm) {
                    case MEAN:
                        w = indeg[v] == 0 ? 0 : w / indeg[v];
                        break;
                    case GCN:
                        w = w / Math.sqrt((indeg[v] + 1) * (indeg[u] + 1)) + (u == v ? 1.0 / (indeg[v] + 1) : 0);
                        break;
                    default:
                        break;
                }
                a[v * n + u] = w;
            }
        }
        return matrix(a);
    }

    /** The n×n mask (double) of the pairs v←u whose nodes one partition owns: edges no exchange carries. */
    Tensor samePartition() {
        double[] a = new double[n * n];
        for (int v = 0; v < n; v++) {
            for (int u = 0; u < n; u++) {
                a[v * n + u] = owner(v) == owner(u) ? 1 : 0;
            }
        }
        return matrix(a);
    }

    private int owner(long node) {
        int p = 0;
        while (node >= offsets[p + 1]) {
            p++;
        }
        return p;
    }

    /** Edge counts v←u with stored self-loops replaced by one per node (GAT's neighbourhoods). */
    Tensor countsWithOneSelfLoop() {
        double[] a = new double[n * n];
        for (int k = 0; k < src.length; k++) {
            if (src[k] != dst[k]) {
                a[(int) (dst[k] * n + src[k])] += 1;
            }
        }
        for (int v = 0; v < n; v++) {
            a[v * n + v] = 1;
        }
        return matrix(a);
    }

    private Tensor matrix(double[] a) {
        Tensor t = torch.empty(new long[] {n, n}, new TensorOptions(torch.ScalarType.Double), null);
        new DoublePointer(t.data_ptr()).put(a);
        return t;
    }

    long rows(int p) {
        return offsets[p + 1] - offsets[p];
    }

    Tensor slice(Tensor full, int p) {
        return full.narrow(0, offsets[p], rows(p));
    }

    /** Deterministic pseudo-random values of a shape (identical on every rank). */
    static Tensor values(long seed, torch.ScalarType type, long... shape) {
        torch.manual_seed(seed);
        return torch.randn(shape).to(type);
    }

    static Scalar s(double v) {
        return new Scalar(v);
    }
}
