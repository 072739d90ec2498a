package io.mn4j.gnn.kernel;

import io.mn4j.functions.autograd.CustomFunction;
import io.mn4j.gnn.graph.Csr;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.tensor.Scopes;
import io.mn4j.tensor.Tensors;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.GradMode;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.T_TensorTensorTensorTensor_T;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptional;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * Sparse-dense product {@code out = A · x} for a CSR matrix {@code A} ({@code numRows x numCols},
 * optional per-entry weights) and a dense {@code x} [numCols, f]: the sum aggregation of message
 * passing, {@code out[i] = sum over entries e of row i of w_e * x[col_e]}. Rows without entries
 * give zero rows.
 *
 * <p>Both directions run LibTorch's {@code embedding_bag} in sum mode (column indices as bags,
 * {@code rowptr} as offsets, weights as {@code per_sample_weights}), which never materialises one
 * row per edge: several times faster than {@code sparse_csr} matmul here. {@link #apply} is
 * differentiable in {@code x} through a {@link CustomFunction} whose backward is the same kernel on
 * the transposed matrix (built once, on first use; a symmetric matrix serves as its own), itself differentiable under
 * {@code create_graph}. Weights are constants: a weight tensor that requires grad is rejected.
 * Keep this object open while outputs of {@link #apply} may be differentiated. Thread-safe.
 */
public final class CsrAggregation implements AutoCloseable {
    private final Side fwd;
    private volatile Side bwd;
    private final boolean owner;
    private final CsrAggregation transposeOf;
    private volatile CsrAggregation transposed;

    private CsrAggregation(Side fwd, Side bwd, boolean owner, CsrAggregation transposeOf) {
        this.fwd = fwd;
        this.bwd = bwd;
        this.owner = owner;
        this.transposeOf = transposeOf;
    }

    /** The aggregation {@code A · x} (the transpose is built on first backward). Takes its own handles on {@code a}. */
    public static CsrAggregation of(Csr a) {
        return new CsrAggregation(new Side(a), null, true, null);
    }

    /**
     * The aggregation {@code A · x} with a transpose the caller already has ({@code aT} must be
     * {@code a}'s transpose in CSR form, e.g. from {@link Csr#transpose()}; not checked).
     */
    public static CsrAggregation of(Csr a, Csr aT) {
        if (aT.numRows() != a.numCols() || aT.numCols() != a.numRows() || aT.nnz() != a.nnz()) {
            throw new IllegalArgumentException(aT + " is not the transpose of " + a);
        }
        return new CsrAggregation(new Side(a), new Side(aT), true, null);
    }

    /** Sum over in-edges of a graph: {@code out[i] = sum over edges j -> i of w * x[j]}. */
    public static CsrAggregation inEdges(Graph g) {
        return of(g.adjacency());
    }

    public long numRows() { return fwd.csr.numRows(); }

    public long numCols() { return fwd.csr.numCols(); }

    public long nnz() { return fwd.csr.nnz(); }

    /** The matrix {@code A}. Owned by this object. */
    public Csr matrix() { return fwd.csr; }

    /** {@code A · x} [numRows, f] without recording autograd history (x: float32/float64 [numCols, f]). */
    public Tensor forward(Tensor x) {
        return spmm(fwd, x);
    }

    /** {@code Aᵀ · g} [numCols, f] without recording autograd history (g: [numRows, f]). */
    public Tensor transposeForward(Tensor g) {
        return spmm(backSide(), g);
    }

    /**
     * {@code A · x}, differentiable in {@code x} (see the class comment). When grad mode is off or
     * {@code x} does not require grad this is {@link #forward}. The result's memory is the
     * caller's alone and backward does not read it: it may be modified in place (GCN adds its
     * self-loop term and bias into it).
     */
    public Tensor apply(Tensor x) {
        if (!GradMode.is_enabled() || !x.requires_grad()) return forward(x);
        checkInput(x, fwd.csr.numCols());
        PointerScope outer = PointerScope.getInnerScope();
        try (PointerScope s = new PointerScope()) {
            Tensor y = forward(x);
            Tensor out = CustomFunction.apply("CsrAggregation", List.of(x), List.of(y), grads -> {
                Tensor g = grads.get(0);
                if (g == null) return Collections.singletonList(null);
                // Grad mode is on here only under create_graph: keep the product differentiable.
                return List.of(GradMode.is_enabled() ? transpose().apply(g) : transposeForward(g));
            }, CustomFunction.Schedule.NATURAL, this).outputs().get(0);
            return Scopes.escape(s, outer, out);
        }
    }

    /** The aggregation by {@code Aᵀ} (shares this object's tensors; closing it does nothing). */
    public CsrAggregation transpose() {
        if (transposeOf != null) return transposeOf;
        CsrAggregation t = transposed;
        if (t == null) {
            synchronized (this) {
                t = transposed;
                if (t == null) transposed = t = new CsrAggregation(backSide(), fwd, false, this);
            }
        }
        return t;
    }

    /** Releases the tensors (for the owning instance). */
    @Override
    public void close() {
        if (!owner) return;
        fwd.close();
        if (bwd != null && bwd != fwd) bwd.close();
    }

    @Override
    public String toString() {
        return "CsrAggregation[" + numRows() + "x" + numCols() + ", nnz=" + nnz() + "]";
    }

    private Side backSide() {
        Side b = bwd;
        if (b == null) {
            synchronized (this) {
                b = bwd;
                if (b == null) {
                    // A symmetric matrix (an undirected graph's) is its own transpose, entry for
                    // entry: backward then reads the same arrays instead of a second copy.
                    if (fwd.csr.isOwnTranspose()) {
                        bwd = b = fwd;
                    } else {
                        try (Csr t = fwd.csr.transpose()) {
                            bwd = b = new Side(t);
                        }
                    }
                }
            }
        }
        return b;
    }

    private static void checkInput(Tensor x, long rows) {
        if (x.dim() != 2 || x.size(0) != rows) {
            throw new IllegalArgumentException("input must be [" + rows + ", f], got " + Tensors.shapeString(x));
        }
        if (!x.is_floating_point()) throw new IllegalArgumentException("input must be floating point, got " + Tensors.type(x));
        if (!x.is_cpu()) throw new IllegalArgumentException("input must be a CPU tensor");
    }

    private static Tensor spmm(Side side, Tensor x) {
        checkInput(x, side.csr.numCols());
        PointerScope outer = PointerScope.getInnerScope();
        try (PointerScope s = new PointerScope(); NoGradGuard ng = new NoGradGuard()) {
            Tensor w = side.weightFor(Tensors.type(x));
            T_TensorTensorTensorTensor_T r = torch.embedding_bag(x.contiguous(), side.csr.col(), side.csr.rowptr(), false, 0, false,
                    w == null ? new TensorOptional() : new TensorOptional(w), true);
            // get0() is a reference into the tuple: take a handle of our own before the tuple goes.
            return Scopes.escape(s, outer, new Tensor(r.get0()));
        }
    }

    /** A matrix and its weights converted to each floating type asked for. */
    private static final class Side {
        final Csr csr;
        final Map<ScalarType, Tensor> weights = new ConcurrentHashMap<>();

        Side(Csr c) {
            if (c.weight() != null && c.weight().requires_grad()) {
                throw new IllegalArgumentException("edge weights that require grad are not supported (they are treated as constants)");
            }
            this.csr = Csr.of(c.numRows(), c.numCols(), c.rowptr(), c.col(), c.weight());
        }

        Tensor weightFor(ScalarType type) {
            Tensor w = csr.weight();
            if (w == null) return null;
            if (Tensors.type(w) == type) return w;
            return weights.computeIfAbsent(type, t -> {
                try (PointerScope s = new PointerScope()) {
                    return Scopes.own(w.to(t).contiguous());
                }
            });
        }

        void close() {
            csr.close();
            weights.values().forEach(Tensor::close);
            weights.clear();
        }
    }
}
