package io.mn4j.gnn.io;

import io.mn4j.gnn.graph.Csr;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.tensor.Tensors;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.LongOptional;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * Reads graphs in the gnn-benchmark {@code .npz} layout (Shchur et al.; also used for Planetoid
 * Cora/CiteSeer/PubMed exports):
 *
 * <ul>
 *   <li>adjacency as scipy CSR: {@code adj_data}, {@code adj_indices}, {@code adj_indptr},
 *       {@code adj_shape}. A stored non-zero {@code adj[i, j]} is the edge {@code j -> i}, so row
 *       {@code i} of the file becomes row {@code i} of the graph's in-edge CSR. Explicit zeros are
 *       dropped. If every stored value is 1 the graph is unweighted, otherwise the values become
 *       float32 edge weights;
 *   <li>features as CSR ({@code attr_data}, {@code attr_indices}, {@code attr_indptr},
 *       {@code attr_shape}) or dense ({@code attr_matrix}), read as dense float32 [n, f]
 *       (duplicate CSR entries are summed, as scipy does);
 *   <li>{@code labels}: int [n], or a dense one-hot [n, c] matrix (argmax is taken);
 *   <li>optional {@code train_idx}, {@code val_idx}, {@code test_idx} node index arrays, turned
 *       into boolean masks. Without them the graph has no masks
 *       ({@link Graph#withRandomSplit} adds some).
 * </ul>
 */
public final class NpzGraphReader {
    private NpzGraphReader() {}

    /** Reads a graph; its class count is the largest label + 1. Errors name the file and the array at fault. */
    public static Graph read(Path file) throws IOException {
        return read(file, -1);
    }

    /**
     * Reads a graph whose labels are checked by {@link LabelCheck}: errors name the file and the
     * array (or node) at fault.
     *
     * @param numClasses the declared class count, or -1 for the largest label + 1
     */
    public static Graph read(Path file, int numClasses) throws IOException {
        try (Npz npz = Npz.open(file); PointerScope scope = new PointerScope()) {
            Csr adj = readAdjacency(npz);
            long n = adj.numRows();
            Graph.Builder b = Graph.builder(adj);
            if (npz.contains("attr_matrix")) {
                Tensor x = npz.read("attr_matrix");
                require(x.dim() == 2 && x.size(0) == n, npz, "attr_matrix must be [" + n + ", f], got " + Tensors.shapeString(x));
                b.features(x.to(ScalarType.Float).contiguous());
            } else if (npz.contains("attr_data")) {
                b.features(readCsrFeatures(npz, n));
            }
            if (npz.contains("labels")) {
                Tensor y = npz.read("labels");
                if (y.dim() == 2) {
                    y = y.argmax(new LongOptional(1), false);
                }
                require(y.dim() == 1 && y.size(0) == n, npz, "labels must have " + n + " entries, got " + Tensors.shapeString(y));
                require(!y.is_floating_point(), npz, "labels must be integers, got " + Tensors.type(y));
                y = y.to(ScalarType.Long).contiguous();
                b.labels(y).numClasses(LabelCheck.classCount(y, numClasses, npz.file() + ": labels", i -> "node " + i));
            }
            if (npz.contains("train_idx") || npz.contains("val_idx") || npz.contains("test_idx")) {
                b.masks(mask(npz, "train_idx", n), mask(npz, "val_idx", n), mask(npz, "test_idx", n));
            }
            Graph g = b.build();
            adj.close();
            return g;
        }
    }

    private static Csr readAdjacency(Npz npz) throws IOException {
        for (String k : new String[] {"adj_data", "adj_indices", "adj_indptr", "adj_shape"}) {
            if (!npz.contains(k)) throw new NpyFormatException(npz.file() + ": no array '" + k + "': not in the gnn-benchmark layout (arrays: " + npz.names() + ")");
        }
        long[] shape = Tensors.toLongArray(npz.read("adj_shape"));
        require(shape.length == 2 && shape[0] == shape[1], npz, "adj_shape must be [n, n], got " + Arrays.toString(shape));
        long n = shape[0];
        long[] indptr = Tensors.toLongArray(npz.read("adj_indptr"));
        long[] indices = Tensors.toLongArray(npz.read("adj_indices"));
        float[] data = Tensors.toFloatArray(npz.read("adj_data"));
        checkCsr(npz, "adj", n, n, indptr, indices, data.length);
        int nnz = 0;
        boolean allOnes = true;
        for (float v : data) {
            if (v != 0f) nnz++;
            if (v != 0f && v != 1f) allOnes = false;
        }
        long[] rp = new long[(int) n + 1];
        long[] col = new long[nnz];
        float[] w = allOnes ? null : new float[nnz];
        int p = 0;
        for (int i = 0; i < n; i++) {
            for (int k = (int) indptr[i]; k < indptr[i + 1]; k++) {
                if (data[k] == 0f) continue;
                col[p] = indices[k];
                if (w != null) w[p] = data[k];
                p++;
            }
            rp[i + 1] = p;
        }
        return Csr.of(n, n, rp, col, w);
    }

    private static Tensor readCsrFeatures(Npz npz, long n) throws IOException {
        for (String k : new String[] {"attr_indices", "attr_indptr", "attr_shape"}) {
            if (!npz.contains(k)) throw new NpyFormatException(npz.file() + ": has attr_data but no '" + k + "'");
        }
        long[] shape = Tensors.toLongArray(npz.read("attr_shape"));
        require(shape.length == 2 && shape[0] == n, npz, "attr_shape must be [" + n + ", f], got " + Arrays.toString(shape));
        long f = shape[1];
        long[] indptr = Tensors.toLongArray(npz.read("attr_indptr"));
        Tensor indices = npz.read("attr_indices").to(ScalarType.Long);
        Tensor data = npz.read("attr_data").to(ScalarType.Float);
        checkCsr(npz, "attr", n, f, indptr, Tensors.toLongArray(indices), data.numel());
        long[] rows = new long[(int) indptr[(int) n]];
        for (int i = 0; i < n; i++) Arrays.fill(rows, (int) indptr[i], (int) indptr[i + 1], i);
        Tensor flat = Tensors.longs(rows).mul(new Scalar(f)).add(indices);
        Tensor x = Tensors.zeros(ScalarType.Float, n * f).index_add_(0, flat, data);
        return x.view(n, f);
    }

    private static void checkCsr(Npz npz, String prefix, long rows, long cols, long[] indptr, long[] indices, long dataLen) throws NpyFormatException {
        require(indptr.length == rows + 1, npz, prefix + "_indptr must have " + (rows + 1) + " entries, got " + indptr.length);
        require(indptr[0] == 0 && indptr[(int) rows] == indices.length, npz,
                prefix + "_indptr must run from 0 to " + indices.length + ", got " + indptr[0] + ".." + indptr[(int) rows]);
        require(dataLen == indices.length, npz, prefix + "_data has " + dataLen + " entries but " + prefix + "_indices has " + indices.length);
        for (int i = 0; i < rows; i++) {
            require(indptr[i + 1] >= indptr[i], npz, prefix + "_indptr decreases at row " + i);
        }
        for (int k = 0; k < indices.length; k++) {
            require(indices[k] >= 0 && indices[k] < cols, npz, prefix + "_indices[" + k + "]=" + indices[k] + " out of range [0," + cols + ")");
        }
    }

    private static Tensor mask(Npz npz, String name, long n) throws IOException {
        boolean[] m = new boolean[(int) n];
        if (npz.contains(name)) {
            long[] idx = Tensors.toLongArray(npz.read(name));
            for (long i : idx) {
                require(i >= 0 && i < n, npz, name + " holds node " + i + " outside [0," + n + ")");
                m[(int) i] = true;
            }
        }
        return Tensors.bools(m);
    }

    private static void require(boolean ok, Npz npz, String msg) throws NpyFormatException {
        if (!ok) throw new NpyFormatException(npz.file() + ": " + msg);
    }
}
