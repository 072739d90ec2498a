package io.mn4j.gnn.dist;

import io.mn4j.gnn.graph.Csr;
import org.bytedeco.pytorch.LongOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptional;
import org.bytedeco.pytorch.global.torch;

/** {@code out = A·x} for a CSR matrix A (rows: outputs, columns: rows of x); differentiable in x. */
final class LocalSum {
    private LocalSum() {
    }

    static Tensor apply(Csr a, Tensor x) {
        if (a.nnz() == 0) {
            return torch.zeros(new long[] {a.numRows(), x.size(1)}, x.options()).add(x.sum().mul(new org.bytedeco.pytorch.Scalar(0.0)));
        }
        Tensor w = a.weight() == null ? null : a.weight().to(x.scalar_type());
        return torch.embedding_bag(x, a.col(), a.rowptr(), false, 0, false,
                w == null ? new TensorOptional() : new TensorOptional(w), true, new LongOptional()).get0();
    }
}
