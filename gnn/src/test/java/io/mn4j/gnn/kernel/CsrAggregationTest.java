package io.mn4j.gnn.kernel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.functions.autograd.CustomFunction;
import io.mn4j.gnn.graph.Csr;
import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.BoolOptional;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorBase;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.TensorTensorHook;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class CsrAggregationTest {

    /**
     * A random rows x cols matrix with empty rows, empty columns (isolated sources), duplicate
     * entries and, optionally, weights.
     */
    static Csr randomCsr(int rows, int cols, int nnz, boolean weighted, long seed) {
        Random r = new Random(seed);
        long[] ri = new long[nnz], ci = new long[nnz];
        float[] w = weighted ? new float[nnz] : null;
        for (int k = 0; k < nnz; k++) {
            // Rows and columns divisible by 3 stay empty.
            int i, j;
            do { i = r.nextInt(rows); } while (i % 3 == 0);
            do { j = r.nextInt(cols); } while (j % 3 == 0);
            ri[k] = i;
            ci[k] = j;
            if (w != null) w[k] = (float) r.nextGaussian();
        }
        if (nnz > 1) { ri[1] = ri[0]; ci[1] = ci[0]; }
        return Csr.fromCoo(rows, cols, ri, ci, w);
    }

    static double maxAbsDiff(Tensor a, Tensor b) {
        try (PointerScope s = new PointerScope()) {
            return a.sub(b).abs().max().item_double();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"float32-unweighted", "float32-weighted", "float64-unweighted", "float64-weighted"})
    void forwardAndBackwardMatchDenseReference(String variant) {
        boolean dbl = variant.startsWith("float64");
        boolean weighted = variant.endsWith("-weighted");
        ScalarType type = dbl ? ScalarType.Double : ScalarType.Float;
        double tol = dbl ? 1e-12 : 1e-5;
        int rows = 40, cols = 31, f = 5;
        try (PointerScope s = new PointerScope(); Csr a = randomCsr(rows, cols, 150, weighted, 7);
                CsrAggregation agg = CsrAggregation.of(a)) {
            Tensor dense = a.toDense(type);
            Tensor x = torch.randn(new long[] {cols, f}, new TensorOptions(type)).requires_grad_(true);
            Tensor gOut = torch.randn(new long[] {rows, f}, new TensorOptions(type));

            Tensor yRef = dense.mm(x);
            Tensor gRef = torch.grad(new TensorVector(yRef.mul(gOut).sum()), new TensorVector(x)).get(0);

            Tensor y = agg.apply(x);
            assertArrayEquals(new long[] {rows, f}, Tensors.shape(y));
            assertEquals(type, Tensors.type(y));
            assertTrue(maxAbsDiff(y, yRef) < tol, "forward differs by " + maxAbsDiff(y, yRef));
            // Empty rows aggregate to exactly zero.
            assertEquals(0.0, y.narrow(0, 0, 1).abs().sum().item_double(), 0.0);
            Tensor g = torch.grad(new TensorVector(y.mul(gOut).sum()), new TensorVector(x)).get(0);
            assertTrue(maxAbsDiff(g, gRef) < tol, "gradient differs by " + maxAbsDiff(g, gRef));
            // Isolated sources (no out-edges) get exactly zero gradient.
            assertEquals(0.0, g.narrow(0, 0, 1).abs().sum().item_double(), 0.0);
            // The non-autograd entry points agree.
            try (NoGradGuard ng = new NoGradGuard()) {
                assertTrue(maxAbsDiff(agg.forward(x), yRef) < tol);
                assertTrue(maxAbsDiff(agg.transposeForward(gOut), gRef) < tol);
                assertTrue(maxAbsDiff(agg.transpose().forward(gOut), gRef) < tol);
            }
        }
    }

    /** A symmetric matrix serves as its own transpose: backward as the dense reference, and closing frees it once. */
    @Test
    void symmetricMatrixIsItsOwnTranspose() {
        int n = 30, f = 4;
        Random r = new Random(11);
        float[][] sym = new float[n][n];
        for (int i = 0; i < n; i++) {
            for (int j = i; j < n; j++) {
                if (r.nextInt(4) == 0) {
                    sym[i][j] = sym[j][i] = (float) r.nextGaussian();
                }
            }
        }
        long[] rp = new long[n + 1];
        List<Long> cols = new ArrayList<>();
        List<Float> ws = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                if (sym[i][j] != 0) {
                    cols.add((long) j);
                    ws.add(sym[i][j]);
                }
            }
            rp[i + 1] = cols.size();
        }
        float[] w = new float[ws.size()];
        for (int k = 0; k < w.length; k++) w[k] = ws.get(k);
        try (PointerScope s = new PointerScope();
                Csr a = Csr.of(n, n, rp, cols.stream().mapToLong(Long::longValue).toArray(), w);
                CsrAggregation agg = CsrAggregation.of(a)) {
            assertTrue(a.isOwnTranspose());
            Tensor dense = a.toDense(ScalarType.Float);
            Tensor x = torch.randn(new long[] {n, f}, new TensorOptions(ScalarType.Float)).requires_grad_(true);
            Tensor gOut = torch.randn(new long[] {n, f}, new TensorOptions(ScalarType.Float));
            Tensor g = torch.grad(new TensorVector(agg.apply(x).mul(gOut).sum()), new TensorVector(x)).get(0);
            assertTrue(maxAbsDiff(g, dense.t().mm(gOut)) < 1e-5);
            assertTrue(maxAbsDiff(agg.transpose().forward(gOut), dense.t().mm(gOut)) < 1e-5);
        }
    }

    @Test
    void backwardIntoLeafAccumulatesAndComposesInAModel() {
        int n = 30, f = 4, h = 3;
        try (PointerScope s = new PointerScope(); Csr a = randomCsr(n, n, 100, true, 3); CsrAggregation agg = CsrAggregation.of(a)) {
            Tensor dense = a.toDense(ScalarType.Double);
            Tensor x = torch.randn(new long[] {n, f}, new TensorOptions(ScalarType.Double)).requires_grad_(true);
            Tensor w1 = torch.randn(new long[] {f, h}, new TensorOptions(ScalarType.Double)).requires_grad_(true);
            Tensor w2 = torch.randn(new long[] {h, 2}, new TensorOptions(ScalarType.Double)).requires_grad_(true);
            // Two layers sharing the aggregation, x also used outside it, an in-place op on an output.
            Tensor refLoss = dense.mm(dense.mm(x).mm(w1).relu().mm(w2)).pow(new Scalar(2)).sum().add(x.sum());
            TensorVector ref = torch.grad(new TensorVector(refLoss), new TensorVector(x, w1, w2));
            Tensor h1 = agg.apply(x).mm(w1);
            h1.relu_();
            Tensor loss = agg.apply(h1.mm(w2)).pow(new Scalar(2)).sum().add(x.sum());
            loss.backward();
            assertTrue(maxAbsDiff(x.grad(), ref.get(0)) < 1e-10);
            assertTrue(maxAbsDiff(w1.grad(), ref.get(1)) < 1e-10);
            assertTrue(maxAbsDiff(w2.grad(), ref.get(2)) < 1e-10);
        }
    }

    @Test
    void nonContiguousInputs() {
        int n = 9, f = 4;
        try (PointerScope s = new PointerScope(); Csr a = randomCsr(n, n, 20, true, 8); CsrAggregation agg = CsrAggregation.of(a)) {
            Tensor dense = a.toDense(ScalarType.Double);
            Tensor base = torch.randn(new long[] {f, n}, new TensorOptions(ScalarType.Double)).requires_grad_(true);
            Tensor x = base.t();
            assertFalse(x.is_contiguous());
            Tensor gRef = torch.grad(new TensorVector(dense.mm(x).pow(new Scalar(2)).sum()), new TensorVector(base)).get(0);
            Tensor g = torch.grad(new TensorVector(agg.apply(x).pow(new Scalar(2)).sum()), new TensorVector(base)).get(0);
            assertTrue(maxAbsDiff(g, gRef) < 1e-12);
            Tensor row = torch.randn(new long[] {1, f}, new TensorOptions(ScalarType.Double)).requires_grad_(true);
            Tensor expanded = row.expand(n, f);
            Tensor g2 = torch.grad(new TensorVector(agg.apply(expanded).sum()), new TensorVector(row)).get(0);
            Tensor g2Ref = torch.grad(new TensorVector(dense.mm(expanded).sum()), new TensorVector(row)).get(0);
            assertTrue(maxAbsDiff(g2, g2Ref) < 1e-12);
        }
    }

    @Test
    void hooksOnTheOutputSeeAndChangeTheGradientFirst() {
        int n = 12, f = 2;
        try (PointerScope s = new PointerScope(); Csr a = randomCsr(n, n, 30, false, 5); CsrAggregation agg = CsrAggregation.of(a)) {
            Tensor dense = a.toDense(ScalarType.Double);
            Tensor x = torch.randn(new long[] {n, f}, new TensorOptions(ScalarType.Double)).requires_grad_(true);
            TensorTensorHook doubler = new TensorTensorHook() {
                @Override
                public TensorBase call(TensorBase g) {
                    return new Tensor(g).mul(new Scalar(2.0));
                }
            };
            Tensor y = agg.apply(x);
            y.register_hook(doubler);
            Tensor g = torch.grad(new TensorVector(y.sum()), new TensorVector(x)).get(0);
            Tensor gRef = dense.sum(new long[] {0}, false, null).unsqueeze(1).expand(n, f).mul(new Scalar(2.0));
            assertTrue(maxAbsDiff(g, gRef) < 1e-12);
        }
    }

    @Test
    void secondOrderGradientUnderCreateGraph() {
        int n = 10, f = 3;
        try (PointerScope s = new PointerScope(); Csr a = randomCsr(n, n, 25, true, 11); CsrAggregation agg = CsrAggregation.of(a)) {
            Tensor dense = a.toDense(ScalarType.Double);
            Tensor x = torch.randn(new long[] {n, f}, new TensorOptions(ScalarType.Double)).requires_grad_(true);
            // d/dx of ||d(sum (Ax)^2)/dx||^2 needs the transposed product to be differentiable.
            Tensor gRef = torch.grad(new TensorVector(dense.mm(x).pow(new Scalar(2)).sum()), new TensorVector(x), new TensorVector(), new BoolOptional(true), true, false).get(0);
            Tensor hRef = torch.grad(new TensorVector(gRef.pow(new Scalar(2)).sum()), new TensorVector(x)).get(0);
            Tensor g = torch.grad(new TensorVector(agg.apply(x).pow(new Scalar(2)).sum()), new TensorVector(x), new TensorVector(), new BoolOptional(true), true, false).get(0);
            Tensor hh = torch.grad(new TensorVector(g.pow(new Scalar(2)).sum()), new TensorVector(x)).get(0);
            assertTrue(maxAbsDiff(g, gRef) < 1e-10);
            assertTrue(maxAbsDiff(hh, hRef) < 1e-10);
        }
    }

    @Test
    void edgeCasesEmptyMatrixAndNoGrad() {
        try (PointerScope s = new PointerScope()) {
            // No entries at all: zero output, zero gradient.
            try (Csr empty = Csr.of(4, 3, new long[5], new long[0], null); CsrAggregation agg = CsrAggregation.of(empty)) {
                Tensor x = torch.randn(new long[] {3, 2}).requires_grad_(true);
                Tensor y = agg.apply(x);
                assertArrayEquals(new long[] {4, 2}, Tensors.shape(y));
                assertEquals(0.0, y.abs().sum().item_double(), 0.0);
                y.sum().backward();
                assertEquals(0.0, x.grad().abs().sum().item_double(), 0.0);
            }
            // Zero rows.
            try (Csr none = Csr.of(0, 3, new long[1], new long[0], null); CsrAggregation agg = CsrAggregation.of(none)) {
                assertArrayEquals(new long[] {0, 2}, Tensors.shape(agg.forward(torch.randn(3, 2))));
            }
            try (Csr a = randomCsr(6, 6, 10, false, 1); CsrAggregation agg = CsrAggregation.of(a)) {
                Tensor x = torch.randn(new long[] {6, 2}).requires_grad_(true);
                int live = CustomFunction.liveFunctions();
                try (NoGradGuard ng = new NoGradGuard()) {
                    assertFalse(agg.apply(x).requires_grad());
                }
                assertEquals(live, CustomFunction.liveFunctions());
                assertThrows(IllegalArgumentException.class, () -> agg.apply(torch.randn(5, 2)));
                assertThrows(IllegalArgumentException.class, () -> agg.apply(torch.ones(new long[] {6, 2}, new TensorOptions(ScalarType.Long))));
            }
        }
    }

    @Test
    void manyIterationsKeepHooksBoundedAndSurviveGc() {
        int n = 200, f = 8;
        int live = CustomFunction.liveFunctions();
        try (Csr a = randomCsr(n, n, 1000, true, 2); CsrAggregation agg = CsrAggregation.of(a)) {
            Tensor dense = a.toDense(ScalarType.Float);
            for (int it = 0; it < 50; it++) {
                try (PointerScope s = new PointerScope()) {
                    Tensor x = torch.randn(new long[] {n, f}).requires_grad_(true);
                    Tensor y = agg.apply(x);
                    System.gc();
                    y.sum().backward();
                    Tensor gRef = dense.sum(new long[] {0}, false, null).unsqueeze(1).expand(n, f);
                    assertTrue(maxAbsDiff(x.grad(), gRef) < 1e-4);
                }
            }
            // Each graph releases its function when it goes: nothing accumulates over iterations.
            assertTrue(CustomFunction.liveFunctions() - live <= 1, "functions kept: " + (CustomFunction.liveFunctions() - live));
        }
    }
}
