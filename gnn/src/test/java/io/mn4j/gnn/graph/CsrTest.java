package io.mn4j.gnn.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.mn4j.tensor.Tensors;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;

/** Csr's diagonal: counting and removing the entries (i, i). */
class CsrTest {
    private static long[] col(Csr m) {
        return Tensors.toLongArray(m.col());
    }

    @Test
    void noRowsNoEntries() {
        try (Csr m = Csr.of(0, 0, new long[] {0}, new long[0], null); Csr none = m.withoutDiagonal()) {
            assertEquals(0, m.diagonalCount());
            assertEquals(0, none.numRows());
            assertEquals(0, none.nnz());
            assertArrayEquals(new long[] {0}, none.rowptrArray());
        }
    }

    @Test
    void emptyRowsAndMixedRows() {
        // row 0: 0 (loop), 2; row 1: empty; row 2: 2, 1, 2 (two loops); row 3: empty; row 4: 1
        long[] rp = {0, 2, 2, 5, 5, 6};
        long[] c = {0, 2, 2, 1, 2, 1};
        try (Csr m = Csr.of(5, 5, rp, c, null); Csr none = m.withoutDiagonal()) {
            assertEquals(3, m.diagonalCount());
            assertEquals(5, none.numRows());
            assertEquals(5, none.numCols());
            assertArrayEquals(new long[] {0, 1, 1, 2, 2, 3}, none.rowptrArray());
            assertArrayEquals(new long[] {2, 1, 1}, col(none));
            assertNull(none.weight());
            assertEquals(0, none.diagonalCount());
        }
    }

    @Test
    void allLoops() {
        try (Csr m = Csr.of(3, 3, new long[] {0, 1, 3, 4}, new long[] {0, 1, 1, 2}, null); Csr none = m.withoutDiagonal()) {
            assertEquals(4, m.diagonalCount());
            assertArrayEquals(new long[] {0, 0, 0, 0}, none.rowptrArray());
            assertEquals(0, none.nnz());
        }
    }

    @Test
    void noLoopsGivesAnEqualNewMatrix() {
        long[] rp = {0, 2, 3, 4};
        long[] c = {1, 2, 0, 1};
        float[] w = {0.5f, 1.5f, 2.5f, 3.5f};
        try (Csr m = Csr.of(3, 3, rp, c, w); Csr none = m.withoutDiagonal()) {
            assertEquals(0, m.diagonalCount());
            assertNotSame(m, none);
            assertArrayEquals(rp, none.rowptrArray());
            assertArrayEquals(c, col(none));
            assertArrayEquals(w, none.weightArray());
        }
    }

    @Test
    void weightsFollowTheKeptEntriesInTheirOwnDtype() {
        try (PointerScope s = new PointerScope();
                Csr m = Csr.of(3, 3, Tensors.longs(new long[] {0, 2, 4, 5}), Tensors.longs(new long[] {0, 1, 1, 2, 2}),
                        Tensors.doubles(new double[] {1, 2, 3, 4, 5}));
                Csr none = m.withoutDiagonal()) {
            assertEquals(3, m.diagonalCount());
            assertArrayEquals(new long[] {0, 1, 2, 2}, none.rowptrArray());
            assertArrayEquals(new long[] {1, 2}, col(none));
            assertEquals(ScalarType.Double.value, none.weight().scalar_type().value);
            assertArrayEquals(new double[] {2, 4}, none.weightArrayDouble());
        }
    }

    @Test
    void rectangularMatricesHaveTheirDiagonalInTheLeadingSquare() {
        // 4 x 2: rows 2 and 3 hold column indices 0..1 only, none on a diagonal
        try (Csr tall = Csr.of(4, 2, new long[] {0, 1, 2, 4, 5}, new long[] {0, 1, 0, 1, 1}, null);
                Csr none = tall.withoutDiagonal()) {
            assertEquals(2, tall.diagonalCount());
            assertEquals(4, none.numRows());
            assertEquals(2, none.numCols());
            assertArrayEquals(new long[] {0, 0, 0, 2, 3}, none.rowptrArray());
            assertArrayEquals(new long[] {0, 1, 1}, col(none));
        }
        // 2 x 5: columns 2..4 are never on the diagonal
        try (Csr wide = Csr.of(2, 5, new long[] {0, 3, 5}, new long[] {0, 3, 4, 1, 2}, null);
                Csr none = wide.withoutDiagonal()) {
            assertEquals(2, wide.diagonalCount());
            assertArrayEquals(new long[] {0, 2, 3}, none.rowptrArray());
            assertArrayEquals(new long[] {3, 4, 2}, col(none));
            assertFalse(none.hasWeight());
        }
    }
}
