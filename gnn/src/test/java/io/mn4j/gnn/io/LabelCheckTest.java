package io.mn4j.gnn.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.gnn.graph.Graph;
import io.mn4j.tensor.Tensors;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The label check every reader shares: class counts, the "far above the distinct labels" threshold, declared counts, negatives. */
class LabelCheckTest {
    @TempDir
    Path tmp;

    private static int count(int declared, long... labels) throws GraphFormatException {
        try (PointerScope s = new PointerScope()) {
            return LabelCheck.classCount(Tensors.longs(labels), declared, "f.npz", i -> "node " + i);
        }
    }

    @Test
    void classCountIsLargestLabelPlusOneOrTheDeclaredOne() throws Exception {
        assertEquals(3, count(-1, 0, 2, 1, Graph.UNLABELLED));
        assertEquals(0, count(-1, Graph.UNLABELLED, Graph.UNLABELLED));
        assertEquals(0, count(-1));
        assertEquals(10, count(10, 0, 2, 9));
    }

    @Test
    void threshold() throws Exception {
        // 2 distinct labels allow 2*2 + 16 = 20 classes, so a largest label of 19 and not 20.
        assertEquals(20, count(-1, 0, 19, 19));
        GraphFormatException e = assertThrows(GraphFormatException.class, () -> count(-1, 0, 20, 0));
        assertMessage(e, "f.npz: node 1 has label 20", "21 classes for 2 distinct labels", "2 x 2 + 16 = 20", "declare the class count");
        assertEquals(21, count(21, 0, 20, 0), "declared: sparse ids are fine");
    }

    @Test
    void declaredCountBoundsTheLabels() {
        assertMessage(assertThrows(GraphFormatException.class, () -> count(3, 0, 1, 2, 3, 5)), "node 3 has label 3",
                "outside the 3 classes declared", "1 more");
    }

    @Test
    void negativeLabelsOtherThanUnlabelledAreErrors() {
        assertMessage(assertThrows(GraphFormatException.class, () -> count(-1, 0, Graph.UNLABELLED, -1)), "node 2 has label -1",
                String.valueOf(Graph.UNLABELLED));
        assertMessage(assertThrows(GraphFormatException.class, () -> count(5, -7, 0)), "node 0 has label -7");
    }

    /** Issue 35: one label of 1,000,000 in Cora-sized data made 1,000,001 classes; now the npz reader stops, naming file and node. */
    @Test
    void npzReaderRejectsOneHugeLabel() throws Exception {
        int n = 2708;
        long[] labels = new long[n];
        for (int i = 0; i < n; i++) {
            labels[i] = i % 7;
        }
        labels[1234] = 1_000_000;
        Path file = tmp.resolve("huge-label.npz");
        try (PointerScope s = new PointerScope()) {
            Map<String, Tensor> arrays = new LinkedHashMap<>();
            arrays.put("adj_data", Tensors.floats(new float[] {1, 1}));
            arrays.put("adj_indices", Tensors.longs(1, 0));
            long[] indptr = new long[n + 1];
            for (int i = 1; i <= n; i++) {
                indptr[i] = 2;
            }
            indptr[1] = 1;
            arrays.put("adj_indptr", Tensors.longs(indptr));
            arrays.put("adj_shape", Tensors.longs(n, n));
            arrays.put("labels", Tensors.longs(labels));
            Npz.write(file, arrays, false);
        }
        assertMessage(assertThrows(GraphFormatException.class, () -> NpzGraphReader.read(file)), file.toString(), "labels",
                "node 1234 has label 1000000", "1000001 classes for 8 distinct labels");
        try (Graph g = NpzGraphReader.read(file, 1_000_001)) {
            assertEquals(1_000_001, g.numClasses());
        }
        Files.delete(file);
    }

    /** Asserts that the message of {@code e} holds every fragment. */
    static void assertMessage(Exception e, String... fragments) {
        for (String f : fragments) {
            assertTrue(e.getMessage().contains(f), "message lacks '" + f + "': " + e.getMessage());
        }
    }
}
