package io.mn4j.gnn.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.mn4j.tensor.Tensors;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** Csr.isOwnTranspose: true exactly when transpose() would give the same arrays, bit for bit. */
class CsrOwnTransposeTest {
    // 0 - 1, 0 - 2, 1 - 2 both ways, a self-loop on 3; rows sorted.
    private static final long[] RP = {0, 2, 4, 6, 7};
    private static final long[] COL = {1, 2, 0, 2, 0, 1, 3};

    private static Csr doubles(long[] rp, long[] col, double[] w) {
        return Csr.of(rp.length - 1, rp.length - 1, Tensors.longs(rp), Tensors.longs(col), w == null ? null : Tensors.doubles(w));
    }

    /** Asserts isOwnTranspose agrees with comparing against the transpose itself. */
    private static void check(Csr m, boolean expected) {
        try (Csr t = m.transpose()) {
            boolean same = m.numRows() == t.numRows() && m.numCols() == t.numCols()
                    && Arrays.equals(m.rowptrArray(), t.rowptrArray())
                    && Arrays.equals(Tensors.toLongArray(m.col()), Tensors.toLongArray(t.col()))
                    && (m.weight() == null || Tensors.bytes(m.weight()).equals(Tensors.bytes(t.weight())));
            assertEquals(expected, same, "compared with the transpose itself");
        }
        assertEquals(expected, m.isOwnTranspose());
    }

    @Test
    void symmetricUnweightedAndWeighted() {
        try (Csr m = Csr.of(4, 4, RP, COL, null)) {
            check(m, true);
        }
        try (Csr m = Csr.of(4, 4, RP, COL, new float[] {0.5f, 1.5f, 0.5f, 2.5f, 1.5f, 2.5f, 7f})) {
            check(m, true);
        }
        try (Csr m = doubles(RP, COL, new double[] {0.5, 1.5, 0.5, 2.5, 1.5, 2.5, 7})) {
            check(m, true);
        }
    }

    @Test
    void asymmetricWeightsStructureOrSignOfZero() {
        try (Csr m = doubles(RP, COL, new double[] {0.5, 1.5, 0.5, 2.5, 1.5, 2.6, 7})) {
            check(m, false);
        }
        try (Csr m = doubles(RP, COL, new double[] {0.0, 1.5, -0.0, 2.5, 1.5, 2.5, 7})) {
            check(m, false);
        }
        // 0 -> 1 without 1 -> 0 (the same counts per row and column as a symmetric matrix would not have).
        try (Csr m = Csr.of(3, 3, new long[] {0, 1, 1, 1}, new long[] {1}, null)) {
            check(m, false);
        }
        // Same row and column counts, different entries: a directed cycle.
        try (Csr m = Csr.of(3, 3, new long[] {0, 1, 2, 3}, new long[] {1, 2, 0}, null)) {
            check(m, false);
        }
        try (Csr m = Csr.of(2, 3, new long[] {0, 1, 2}, new long[] {1, 0}, null)) {
            assertFalse(m.isOwnTranspose());
        }
    }

    @Test
    void unsortedRowsAreNotTheirTranspose() {
        // Symmetric as a matrix, but row 0 lists 2 before 1: the transpose lists them in order.
        try (Csr m = Csr.of(4, 4, RP, new long[] {2, 1, 0, 2, 0, 1, 3}, null)) {
            check(m, false);
        }
    }

    @Test
    void emptyMatrix() {
        try (Csr m = Csr.of(3, 3, new long[] {0, 0, 0, 0}, new long[0], null)) {
            check(m, true);
            assertArrayEquals(new long[] {0, 0, 0, 0}, m.rowptrArray());
        }
    }
}
