package io.mn4j.gnn.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.gnn.io.EdgeListReader;
import io.mn4j.tensor.Tensors;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class GraphTest {
    // Edges src -> dst of a 5-node graph; node 4 is isolated, 0 -> 0 is a self loop, 1 -> 2 is doubled.
    static final long[] SRC = {0, 1, 1, 2, 3, 0, 1};
    static final long[] DST = {1, 2, 0, 0, 2, 0, 2};

    static String str(long[] a) { return Arrays.toString(a); }

    @Test
    void buildsInEdgeCsrFromEdges() {
        try (Graph g = Graph.fromEdges(5, SRC, DST); PointerScope s = new PointerScope()) {
            assertEquals(5, g.numNodes());
            assertEquals(7, g.numEdges());
            // Row = destination, input order kept inside a row.
            assertEquals("[0, 3, 4, 7, 7, 7]", str(Tensors.toLongArray(g.rowptr())));
            assertEquals("[1, 2, 0, 0, 1, 3, 1]", str(Tensors.toLongArray(g.col())));
            assertEquals("[3, 1, 3, 0, 0]", str(Tensors.toLongArray(g.inDegrees())));
            assertEquals("[2, 3, 1, 1, 0]", str(Tensors.toLongArray(g.outDegrees())));
            assertFalse(g.isSymmetric());
            assertNull(g.features());
            // The transpose lists out-edges, destinations ascending.
            try (Csr t = g.transpose()) {
                assertEquals("[0, 2, 5, 6, 7, 7]", str(t.rowptrArray()));
                assertEquals("[0, 1, 0, 2, 2, 0, 2]", str(Tensors.toLongArray(t.col())));
                try (Csr tt = t.transpose()) {
                    assertTrue(tt.toDense(ScalarType.Float).equal(g.adjacency().toDense(ScalarType.Float)));
                }
            }
        }
    }

    @Test
    void selfLoopsAndSymmetrize() {
        try (Graph g = Graph.fromEdges(5, SRC, DST); Graph loops = g.withSelfLoops(); Graph none = g.withoutSelfLoops();
                Graph sym = g.symmetrize(); PointerScope s = new PointerScope()) {
            // Node 0 already had a loop: only 1..4 get one, appended at the end of their rows.
            assertEquals(11, loops.numEdges());
            assertEquals("[0, 3, 5, 9, 10, 11]", str(Tensors.toLongArray(loops.rowptr())));
            assertEquals("[1, 2, 0, 0, 1, 1, 3, 1, 2, 3, 4]", str(Tensors.toLongArray(loops.col())));
            assertEquals(6, none.numEdges());
            // Undirected: {0,0} {0,1} {0,2} {1,2} {2,3}; each once per direction, loop once, rows sorted.
            assertEquals("[0, 3, 5, 8, 9, 9]", str(Tensors.toLongArray(sym.rowptr())));
            assertEquals("[0, 1, 2, 0, 2, 0, 1, 3, 2]", str(Tensors.toLongArray(sym.col())));
            assertTrue(sym.isSymmetric());
        }
    }

    @Test
    void weightsFollowTheirEdgesAndNodeDataIsChecked() {
        float[] w = {1, 2, 3, 4, 5, 6, 7};
        try (PointerScope s = new PointerScope(); Csr a = Csr.fromCoo(5, 5, DST, SRC, w); Graph g = Graph.builder(a).build();
                Graph loops = g.withSelfLoops(); Csr t = g.transpose()) {
            assertEquals("[3.0, 4.0, 6.0, 1.0, 2.0, 5.0, 7.0]", Arrays.toString(Tensors.toFloatArray(g.edgeWeight())));
            assertEquals("[3.0, 4.0, 6.0, 1.0, 1.0, 2.0, 5.0, 7.0, 1.0, 1.0, 1.0]", Arrays.toString(Tensors.toFloatArray(loops.edgeWeight())));
            // Dense A^T equals the dense transpose of A.
            assertTrue(t.toDense(ScalarType.Double).equal(g.adjacency().toDense(ScalarType.Double).t()));
            Tensor wrongRows = Tensors.zeros(ScalarType.Float, 4, 3);
            assertThrows(IllegalArgumentException.class, () -> g.withFeatures(wrongRows));
            assertThrows(IllegalArgumentException.class, () -> g.withLabels(Tensors.zeros(ScalarType.Float, 5), 2));
            try (Graph split = g.withRandomSplit(0.4, 0.2, 3)) {
                assertEquals(2, split.trainMask().sum().item_long());
                assertEquals(1, split.valMask().sum().item_long());
                assertEquals(2, split.testMask().sum().item_long());
                assertEquals(5, split.trainMask().logical_or(split.valMask()).logical_or(split.testMask()).sum().item_long());
            }
        }
        assertThrows(IllegalArgumentException.class, () -> Graph.fromEdges(3, new long[] {0}, new long[] {3}));
    }

    @Test
    void float64WeightsStayExact() {
        double third = 1.0 / 3.0;
        try (PointerScope s = new PointerScope()) {
            Tensor w = Tensors.doubles(new double[] {third, 2 * third, 1e-300, 4, 5, 6, 7});
            try (Csr a = Csr.of(5, 5, Tensors.longs(new long[] {0, 3, 4, 7, 7, 7}), Tensors.longs(new long[] {1, 2, 0, 0, 1, 3, 1}), w);
                    Graph g = Graph.builder(a).build(); Graph loops = g.withSelfLoops(); Graph none = loops.withoutSelfLoops(); Csr t = g.transpose()) {
                assertEquals(ScalarType.Double, Tensors.type(loops.edgeWeight()));
                double[] lw = Tensors.toDoubleArray(loops.edgeWeight());
                assertEquals(third, lw[0], 0.0);
                assertEquals(1e-300, lw[2], 0.0);
                assertEquals(1.0, lw[4], 0.0);
                assertArrayEquals(new double[] {third, 2 * third, 4, 5, 6, 7}, Tensors.toDoubleArray(none.edgeWeight()), 0.0, "the 0 -> 0 loop (1e-300) is gone");
                assertTrue(t.toDense(ScalarType.Double).equal(a.toDense(ScalarType.Double).t()));
                assertEquals(2 * third, a.toDense(ScalarType.Double).select(0, 0).select(0, 2).item_double(), 0.0);
            }
        }
    }

    @Test
    void graphHandlesAreIndependentOfTheCallersScopeAndTensors() {
        Graph g;
        try (PointerScope s = new PointerScope()) {
            Tensor x = Tensors.floats(new float[] {1, 2, 3, 4, 5}, 5, 1);
            try (Graph base = Graph.fromEdges(5, SRC, DST)) {
                g = base.withFeatures(x);
            }
            x.close();
        }
        // The scope and the caller's handles are gone; the graph's own handles still work.
        try (PointerScope s = new PointerScope()) {
            assertEquals(15.0, g.features().sum().item_double(), 0.0);
            assertEquals(7, Tensors.toLongArray(g.col()).length);
        }
        g.close();
    }

    @Test
    void readsEdgeLists(@TempDir Path dir) throws IOException {
        Path f = Files.writeString(dir.resolve("g.txt"), "# a comment\n0 1\n\n1,2\n% another\n  3\t0  \n");
        try (Graph g = EdgeListReader.read(f); PointerScope s = new PointerScope()) {
            assertEquals(4, g.numNodes());
            assertEquals(3, g.numEdges());
            assertEquals("[0, 1, 2, 3, 3]", str(Tensors.toLongArray(g.rowptr())));
            assertEquals("[3, 0, 1]", str(Tensors.toLongArray(g.col())));
        }
        try (Graph g = EdgeListReader.read(f, 10)) {
            assertEquals(10, g.numNodes());
        }
        Path w = Files.writeString(dir.resolve("w.txt"), "0 1 0.5\n1 0 2\n");
        try (Graph g = EdgeListReader.read(w); PointerScope s = new PointerScope()) {
            assertEquals("[2.0, 0.5]", Arrays.toString(Tensors.toFloatArray(g.edgeWeight())));
        }
        assertTrue(assertThrows(IOException.class, () -> EdgeListReader.read(Files.writeString(dir.resolve("b1"), "0 1\n1 x\n")))
                .getMessage().contains("b1:2: node id 'x'"));
        assertTrue(assertThrows(IOException.class, () -> EdgeListReader.read(Files.writeString(dir.resolve("b2"), "0 1\n1 2 3\n")))
                .getMessage().contains("3 columns"));
        assertTrue(assertThrows(IOException.class, () -> EdgeListReader.read(f, 3)).getMessage().contains("node id 3"));
        assertThrows(IOException.class, () -> EdgeListReader.read(dir.resolve("missing.txt")));
    }

    @Test
    void csrChecksItsInput() {
        try (PointerScope s = new PointerScope()) {
            assertThrows(IllegalArgumentException.class, () -> Csr.of(2, 2, new long[] {0, 1, 3}, new long[] {0, 1}, null));
            assertThrows(IllegalArgumentException.class, () -> Csr.of(2, 2, Tensors.ints(new int[] {0, 1, 2}), Tensors.longs(new long[] {0, 1}), null));
            try (Csr bad = Csr.of(2, 2, new long[] {0, 1, 2}, new long[] {0, 5}, null)) {
                assertThrows(IllegalStateException.class, bad::validate);
            }
            try (Csr ok = Csr.of(2, 3, new long[] {0, 1, 2}, new long[] {2, 0}, null)) {
                ok.validate();
                assertArrayEquals(new long[] {1, 0, 1}, Tensors.toLongArray(ok.colCounts()));
            }
        }
    }
}
