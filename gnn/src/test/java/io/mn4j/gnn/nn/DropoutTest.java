package io.mn4j.gnn.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.gnn.graph.Csr;
import io.mn4j.gnn.random.KeepMask;
import io.mn4j.gnn.shard.EdgeEnds;
import io.mn4j.tensor.Tensors;
import java.util.Arrays;
import java.util.stream.LongStream;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;

class DropoutTest {
    private static long[] range(int n) {
        return LongStream.range(0, n).toArray();
    }

    @Test
    void keepsTheRightFractionScaledAndIsAFunctionOfTheKey() {
        try (PointerScope s = new PointerScope()) {
            Tensor x = torch.ones(300, 1001);
            Tensor a = Dropout.apply(x, 0.3, DropoutKey.of(5, 0, 0), range(300));
            Tensor b = Dropout.apply(x, 0.3, DropoutKey.of(5, 0, 0), range(300));
            assertTrue(a.equal(b), "same key, same mask");
            for (DropoutKey other : new DropoutKey[] {DropoutKey.of(6, 0, 0), DropoutKey.of(5, 1, 0), DropoutKey.of(5, 0, 1)}) {
                assertFalse(a.equal(Dropout.apply(x, 0.3, other, range(300))), "another seed, step or site, another mask: " + other);
            }
            double kept = a.ne(new Scalar(0.0)).sum().item_double() / x.numel();
            assertEquals(0.7, kept, 0.005, "fraction kept");
            Tensor keptValues = a.masked_select(a.ne(new Scalar(0.0)));
            assertTrue(keptValues.sub(new Scalar(1 / 0.7)).abs().max().item_double() < 1e-6, "kept values are scaled by 1/(1-p)");
            assertEquals(1.0, a.mean().item_double(), 0.01, "expectation preserved");
        }
    }

    @Test
    void aRowsMaskDependsOnItsNodeIdOnlyNotOnItsPosition() {
        try (PointerScope s = new PointerScope()) {
            Tensor x = torch.ones(50, 7);
            long[] ids = range(50);
            long[] reversed = new long[50];
            for (int i = 0; i < 50; i++) {
                reversed[i] = ids[49 - i];
            }
            DropoutKey key = DropoutKey.of(3, 2, 1);
            Tensor a = Dropout.apply(x, 0.5, key, ids);
            Tensor b = Dropout.apply(x, 0.5, key, reversed);
            assertTrue(a.flip(new long[] {0}).equal(b), "rows follow their ids");
            // Rows 10..19 alone, as a rank holding those nodes would draw them.
            Tensor part = Dropout.apply(torch.ones(10, 7), 0.5, key, Arrays.copyOfRange(ids, 10, 20));
            assertTrue(a.narrow(0, 10, 10).equal(part), "a subset of rows draws what the whole draws");
            KeepMask keep = new KeepMask(0.5);
            for (int j = 0; j < 7; j++) {
                assertEquals(keep.value(key.node(13), j), a.get(13).get(j).item_double(), 1e-6, "element " + j + " is KeepMask's");
            }
        }
    }

    @Test
    void gradientIsTheMaskAndDoubleInputsStayDouble() {
        try (PointerScope s = new PointerScope()) {
            Tensor x = torch.randn(64, 33).to(ScalarType.Double).set_requires_grad(true);
            Tensor y = Dropout.apply(x, 0.5, DropoutKey.of(1, 0, 0), range(64));
            assertEquals(ScalarType.Double, Tensors.type(y));
            y.sum().backward();
            Tensor mask = y.detach().div(x.detach());
            assertTrue(x.grad().allclose(mask, 1e-12, 1e-12, false), "d(sum)/dx is the mask");
        }
    }

    @Test
    void identityWithoutAKeyOrAtZeroZerosAtOneAndClearErrors() {
        try (PointerScope s = new PointerScope()) {
            Tensor x = torch.randn(10, 4);
            DropoutKey key = DropoutKey.of(1, 0, 0);
            assertSame(x, Dropout.apply(x, 0.5, null, null));
            assertSame(x, Dropout.apply(x, 0.0, key, null));
            assertEquals(0.0, Dropout.apply(x, 1.0, key, range(10)).abs().sum().item_double());
            assertThrows(IllegalArgumentException.class, () -> Dropout.apply(x, 1.5, key, range(10)));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Dropout.apply(x, 0.5, key, range(9)));
            assertTrue(e.getMessage().contains("10 rows was given 9 node ids"), e.getMessage());
        }
    }

    @Test
    void anEdgeGetsTheSameHeadsDroppedWhateverItsColumnAndRow() {
        try (PointerScope s = new PointerScope()) {
            // Edges 7->3 and 9->3 as one shard (columns 0, 1 for sources 7, 9), and 9->3 alone as
            // row 1 of another whose only column is node 9.
            Csr both = Csr.of(1, 2, new long[] {0, 2}, new long[] {0, 1}, null);
            Csr alone = Csr.of(2, 1, new long[] {0, 0, 1}, new long[] {0}, null);
            DropoutKey key = DropoutKey.of(4, 5, 1);
            KeepMask keep = new KeepMask(0.6);
            Tensor m1 = Dropout.edgeMask(ScalarType.Float, both, EdgeEnds.of(new long[] {3}, new long[] {7, 9}), 8, key, keep);
            Tensor m2 = Dropout.edgeMask(ScalarType.Float, alone, EdgeEnds.of(new long[] {5, 3}, new long[] {9}), 8, key, keep);
            assertEquals(2, m1.size(0));
            assertTrue(m1.get(1).equal(m2.get(0)), "edge 9->3: " + m1.get(1) + " vs " + m2.get(0));
            for (int k = 0; k < 8; k++) {
                assertEquals(keep.value(key.edge(3, 7), k), m1.get(0).get(k).item_double(), 1e-6, "head " + k + " of 7->3");
            }
        }
    }
}
