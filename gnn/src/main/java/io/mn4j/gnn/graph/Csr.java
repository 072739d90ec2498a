package io.mn4j.gnn.graph;

import io.mn4j.tensor.Scopes;
import io.mn4j.tensor.Tensors;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.util.Arrays;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * A sparse matrix in compressed sparse row form on LibTorch tensors: {@code rowptr} int64
 * [numRows+1], {@code col} int64 [nnz] and optional {@code weight} float32 [nnz] (absent means every
 * stored entry is 1).
 *
 * <p>As a graph adjacency (see {@link Graph}) row {@code i} lists the in-edges of node {@code i}:
 * entry {@code e} in row {@code i} is an edge {@code col[e] -> i}. The transpose lists out-edges.
 *
 * <p>A {@code Csr} owns its own tensor handles (see {@link Tensors#own}); {@link #close()} releases
 * them. It is immutable: methods that change the structure return a new instance.
 */
public final class Csr implements AutoCloseable {
    private final long numRows;
    private final long numCols;
    private final Tensor rowptr;
    private final Tensor col;
    private final Tensor weight;

    private Csr(long numRows, long numCols, Tensor rowptr, Tensor col, Tensor weight, boolean own) {
        this.numRows = numRows;
        this.numCols = numCols;
        this.rowptr = own ? Scopes.own(rowptr) : rowptr;
        this.col = own ? Scopes.own(col) : col;
        this.weight = own ? Scopes.own(weight) : weight;
    }

    /**
     * Wraps existing CSR tensors (handles are copied, data is shared). Checks dtypes and shapes, and
     * that {@code rowptr} starts at 0 and ends at nnz; use {@link #validate()} for a full check.
     *
     * @param weight float32 or float64 [nnz], or null for an unweighted matrix
     */
    public static Csr of(long numRows, long numCols, Tensor rowptr, Tensor col, Tensor weight) {
        if (numRows < 0 || numCols < 0) throw new IllegalArgumentException("negative matrix size " + numRows + "x" + numCols);
        require(Tensors.type(rowptr) == ScalarType.Long && rowptr.dim() == 1 && rowptr.size(0) == numRows + 1,
                "rowptr must be int64 [" + (numRows + 1) + "], got " + Tensors.type(rowptr) + " " + Tensors.shapeString(rowptr));
        require(Tensors.type(col) == ScalarType.Long && col.dim() == 1,
                "col must be int64 [nnz], got " + Tensors.type(col) + " " + Tensors.shapeString(col));
        require(rowptr.is_contiguous() && col.is_contiguous(), "rowptr and col must be contiguous");
        long nnz = col.size(0);
        long first, last;
        try (PointerScope s = new PointerScope()) {
            first = rowptr.narrow(0, 0, 1).item_long();
            last = rowptr.narrow(0, numRows, 1).item_long();
        }
        require(first == 0 && last == nnz, "rowptr must run from 0 to nnz=" + nnz + ", got " + first + ".." + last);
        if (weight != null) {
            require(weight.is_floating_point() && weight.dim() == 1 && weight.size(0) == nnz && weight.is_contiguous(),
                    "weight must be a contiguous floating-point [" + nnz + "] tensor, got " + Tensors.type(weight) + " "
                            + Tensors.shapeString(weight));
        }
        return new Csr(numRows, numCols, rowptr, col, weight, true);
    }

    /** Wraps CSR arrays (copied into new tensors). */
    public static Csr of(long numRows, long numCols, long[] rowptr, long[] col, float[] weight) {
        try (PointerScope s = new PointerScope()) {
            return of(numRows, numCols, Tensors.longs(rowptr), Tensors.longs(col), weight == null ? null : Tensors.floats(weight));
        }
    }

    /**
     * Builds a CSR matrix from coordinates (entry {@code k} is at {@code (rows[k], cols[k])}),
     * keeping duplicates and, within a row, the input order (a stable counting sort, O(nnz + rows)).
     *
     * @param weights per-entry values, or null for an unweighted matrix
     */
    public static Csr fromCoo(long numRows, long numCols, long[] rows, long[] cols, float[] weights) {
        int nr = checkedSize(numRows, "numRows");
        if (rows.length != cols.length) throw new IllegalArgumentException("rows has " + rows.length + " entries, cols " + cols.length);
        if (weights != null && weights.length != rows.length) {
            throw new IllegalArgumentException("weights has " + weights.length + " entries, expected " + rows.length);
        }
        int nnz = rows.length;
        long[] rowptr = new long[nr + 1];
        for (int k = 0; k < nnz; k++) {
            long r = rows[k], c = cols[k];
            if (r < 0 || r >= numRows) throw new IllegalArgumentException("row index " + r + " out of range [0," + numRows + ") at entry " + k);
            if (c < 0 || c >= numCols) throw new IllegalArgumentException("column index " + c + " out of range [0," + numCols + ") at entry " + k);
            rowptr[(int) r + 1]++;
        }
        for (int i = 0; i < nr; i++) rowptr[i + 1] += rowptr[i];
        long[] next = Arrays.copyOf(rowptr, nr);
        long[] col = new long[nnz];
        float[] w = weights == null ? null : new float[nnz];
        for (int k = 0; k < nnz; k++) {
            int p = (int) next[(int) rows[k]]++;
            col[p] = cols[k];
            if (w != null) w[p] = weights[k];
        }
        return of(numRows, numCols, rowptr, col, w);
    }

    public long numRows() { return numRows; }

    public long numCols() { return numCols; }

    /** Number of stored entries. */
    public long nnz() { return col.size(0); }

    /** int64 [numRows+1]; owned by this object, do not close. */
    public Tensor rowptr() { return rowptr; }

    /** int64 [nnz] column index of each entry; owned by this object, do not close. */
    public Tensor col() { return col; }

    /** Per-entry values [nnz], or null when every entry is 1; owned by this object, do not close. */
    public Tensor weight() { return weight; }

    public boolean hasWeight() { return weight != null; }

    /** A copy of {@code rowptr} as a Java array. */
    public long[] rowptrArray() { return Tensors.toLongArray(rowptr); }

    /** A copy of {@code col} as a Java array (column indices must fit an int). */
    public int[] colArray() { return Tensors.toIntArray(col); }

    /** A copy of the weights as a float32 Java array, or null when unweighted. */
    public float[] weightArray() { return weight == null ? null : Tensors.toFloatArray(weight); }

    /** A copy of the weights as a float64 Java array (exact for float32 and float64 weights), or null when unweighted. */
    public double[] weightArrayDouble() { return weight == null ? null : Tensors.toDoubleArray(weight); }

    /**
     * Rows {@code [from, to)} as a matrix of {@code to - from} rows and the same columns; columns
     * and weights are views of this matrix's.
     */
    public Csr rows(long from, long to) {
        if (from < 0 || to < from || to > numRows) {
            throw new IllegalArgumentException("row range [" + from + ", " + to + ") outside [0, " + numRows + "]");
        }
        try (PointerScope s = new PointerScope()) {
            long start = rowptr.narrow(0, from, 1).item_long();
            long end = rowptr.narrow(0, to, 1).item_long();
            Tensor rp = rowptr.narrow(0, from, to - from + 1).sub(new Scalar(start));
            return of(to - from, numCols, rp, col.narrow(0, start, end - start),
                    weight == null ? null : weight.narrow(0, start, end - start));
        }
    }

    /** The same structure with other per-entry values (null removes them). */
    public Csr withWeight(Tensor newWeight) {
        return of(numRows, numCols, rowptr, col, newWeight);
    }

    /** Number of entries in each row, int64 [numRows]. */
    public Tensor rowCounts() {
        PointerScope outer = PointerScope.getInnerScope();
        try (PointerScope s = new PointerScope()) {
            return Scopes.escape(s, outer, rowptr.narrow(0, 1, numRows).sub(rowptr.narrow(0, 0, numRows)));
        }
    }

    /** Number of entries in each column, int64 [numCols]. */
    public Tensor colCounts() {
        long[] counts = new long[checkedSize(numCols, "numCols")];
        for (int c : colArray()) counts[c]++;
        return Tensors.longs(counts);
    }

    /**
     * Number of diagonal entries: entries {@code (i, i)}, whose column index equals their row index
     * (in a graph adjacency, self loops; each duplicate counts). Rows and columns are both numbered
     * from 0 in this matrix, so in a rectangular matrix only rows below {@code numCols} can have one.
     */
    public long diagonalCount() {
        long[] rp = rowptrArray();
        long n = 0;
        // Reads the columns where they are, a slice at a time: a Java copy of them (8 bytes per
        // edge) grew the resident memory of a training rank by ~15 MiB on 2.5M edges, for good.
        try (PointerScope s = new PointerScope()) {
            int row = 0;
            for (long from = 0; from < rp[rp.length - 1]; from += DIAGONAL_SLICE) {
                long len = Math.min(DIAGONAL_SLICE, rp[rp.length - 1] - from);
                LongBuffer cols = Tensors.bytes(col.narrow(0, from, len)).asLongBuffer();
                for (int k = 0; k < len; k++) {
                    long e = from + k;
                    while (rp[row + 1] <= e) row++;
                    if (cols.get(k) == row) n++;
                }
            }
        }
        return n;
    }

    /** Entries read per direct buffer in {@link #diagonalCount()} (a buffer holds under 2 GiB). */
    private static final long DIAGONAL_SLICE = 1L << 26;

    /**
     * This matrix without its diagonal entries (see {@link #diagonalCount()}; in a graph adjacency,
     * without self loops): same size, the other entries in their order with their weights (in the
     * weights' own dtype). Always a new matrix, also when there is nothing to remove.
     */
    public Csr withoutDiagonal() {
        long[] rp = rowptrArray();
        long[] c = Tensors.toLongArray(col);
        long[] ptr = new long[rp.length];
        long[] kept = new long[c.length];
        // entry p of the result is entry source[p] of this matrix (only needed to move weights)
        long[] source = weight == null ? null : new long[c.length];
        int p = 0;
        for (int i = 0; i + 1 < rp.length; i++) {
            for (int e = (int) rp[i], end = (int) rp[i + 1]; e < end; e++) {
                if (c[e] == i) continue;
                if (source != null) source[p] = e;
                kept[p++] = c[e];
            }
            ptr[i + 1] = p;
        }
        try (PointerScope s = new PointerScope()) {
            Tensor w = source == null ? null : weight.index_select(0, Tensors.longs(Arrays.copyOf(source, p))).contiguous();
            return of(numRows, numCols, Tensors.longs(ptr), Tensors.longs(Arrays.copyOf(kept, p)), w);
        }
    }

    /** The row index of every entry (the COO row array), int64 [nnz]. */
    public Tensor rowIndex() {
        return Tensors.longs(rowIndexArray(rowptrArray()));
    }

    static long[] rowIndexArray(long[] rowptr) {
        int n = rowptr.length - 1;
        long[] rows = new long[(int) rowptr[n]];
        for (int i = 0; i < n; i++) Arrays.fill(rows, (int) rowptr[i], (int) rowptr[i + 1], i);
        return rows;
    }

    /**
     * The transpose, in CSR form (that is, this matrix in CSC form): a {@code numCols x numRows}
     * matrix whose row {@code j} lists the rows holding an entry in column {@code j}, in increasing
     * order, with the entries' weights. O(nnz + rows + cols).
     */
    public Csr transpose() {
        int nc = checkedSize(numCols, "numCols");
        long[] rp = rowptrArray();
        int[] c = colArray();
        int nnz = c.length;
        long[] tptr = new long[nc + 1];
        for (int x : c) tptr[x + 1]++;
        for (int j = 0; j < nc; j++) tptr[j + 1] += tptr[j];
        long[] next = Arrays.copyOf(tptr, nc);
        long[] trow = new long[nnz];
        // entry p of the transpose is entry perm[p] of this matrix: weights move in their own dtype
        long[] perm = weight == null ? null : new long[nnz];
        int nr = (int) numRows;
        for (int i = 0; i < nr; i++) {
            for (int e = (int) rp[i], end = (int) rp[i + 1]; e < end; e++) {
                int p = (int) next[c[e]]++;
                trow[p] = i;
                if (perm != null) perm[p] = e;
            }
        }
        try (PointerScope s = new PointerScope()) {
            Tensor tw = perm == null ? null : weight.index_select(0, Tensors.longs(perm)).contiguous();
            return of(numCols, numRows, Tensors.longs(tptr), Tensors.longs(trow), tw);
        }
    }

    /**
     * Whether this matrix is its own {@link #transpose()} entry for entry: square, with the same row
     * pointers, columns and weights (bit for bit) as its transpose, so that it can stand for it
     * (an undirected graph with sorted rows and symmetric weights). Reads the arrays where they are,
     * with one counter per row on the Java heap instead of a transposed copy. False, without
     * looking, for columns or weights of more than 2^31 bytes.
     */
    public boolean isOwnTranspose() {
        long nnz = nnz();
        if (numRows != numCols || col.nbytes() > Integer.MAX_VALUE || (weight != null && weight.nbytes() > Integer.MAX_VALUE)) {
            return false;
        }
        int n = checkedSize(numRows, "numRows");
        long[] rp = rowptrArray();
        LongBuffer c = Tensors.bytes(col).asLongBuffer();
        // The transpose's row pointers count the entries of each column.
        long[] next = new long[n + 1];
        for (int e = 0; e < nnz; e++) next[(int) c.get(e) + 1]++;
        for (int j = 0; j < n; j++) {
            next[j + 1] += next[j];
            if (next[j + 1] != rp[j + 1]) return false;
        }
        // Weights compared as raw bits: 0.0 and -0.0 multiply differently.
        boolean dbl = weight != null && Tensors.type(weight) == ScalarType.Double;
        LongBuffer wl = dbl ? Tensors.bytes(weight).asLongBuffer() : null;
        IntBuffer wi = weight != null && !dbl ? Tensors.bytes(weight).asIntBuffer() : null;
        // Entry p of the transpose is (j, i) with the weight of entry e = (i, j): it must be entry p here.
        for (int i = 0; i < n; i++) {
            for (int e = (int) rp[i], end = (int) rp[i + 1]; e < end; e++) {
                int p = (int) next[(int) c.get(e)]++;
                if (c.get(p) != i || (wl != null && wl.get(p) != wl.get(e)) || (wi != null && wi.get(p) != wi.get(e))) {
                    return false;
                }
            }
        }
        return true;
    }

    /** A dense {@code numRows x numCols} matrix of the given floating type (duplicates are summed). For tests and small graphs. */
    public Tensor toDense(ScalarType type) {
        long[] rp = rowptrArray();
        int[] c = colArray();
        double[] w = weightArrayDouble();
        int nr = checkedSize(numRows, "numRows"), nc = checkedSize(numCols, "numCols");
        if ((long) nr * nc > Integer.MAX_VALUE) throw new IllegalArgumentException("matrix too large for a dense copy: " + nr + "x" + nc);
        double[] d = new double[nr * nc];
        for (int i = 0; i < nr; i++) {
            for (int e = (int) rp[i]; e < rp[i + 1]; e++) d[i * nc + c[e]] += w == null ? 1.0 : w[e];
        }
        PointerScope outer = PointerScope.getInnerScope();
        try (PointerScope s = new PointerScope()) {
            return Scopes.escape(s, outer, Tensors.doubles(d, nr, nc).to(type));
        }
    }

    /**
     * Checks the whole structure: rowptr non-decreasing, column indices in range, finite weights.
     *
     * @throws IllegalStateException naming the first problem found
     */
    public void validate() {
        long[] rp = rowptrArray();
        for (int i = 0; i < numRows; i++) {
            if (rp[i + 1] < rp[i]) throw new IllegalStateException("rowptr decreases at row " + i + ": " + rp[i] + " > " + rp[i + 1]);
        }
        long[] c = Tensors.toLongArray(col);
        for (int e = 0; e < c.length; e++) {
            if (c[e] < 0 || c[e] >= numCols) throw new IllegalStateException("column index " + c[e] + " of entry " + e + " out of range [0," + numCols + ")");
        }
        if (weight != null) {
            double[] w = weightArrayDouble();
            for (int e = 0; e < w.length; e++) if (!Double.isFinite(w[e])) throw new IllegalStateException("weight of entry " + e + " is " + w[e]);
        }
    }

    /** Releases this object's tensor handles. */
    @Override
    public void close() {
        Scopes.closeAll(rowptr, col, weight);
    }

    @Override
    public String toString() {
        return "Csr[" + numRows + "x" + numCols + ", nnz=" + nnz() + (weight != null ? ", weighted" : "") + "]";
    }

    static int checkedSize(long n, String what) {
        if (n < 0 || n > Integer.MAX_VALUE - 8) throw new IllegalArgumentException(what + "=" + n + " does not fit a Java array");
        return (int) n;
    }

    private static void require(boolean ok, String msg) {
        if (!ok) throw new IllegalArgumentException(msg);
    }
}
