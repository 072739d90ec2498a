package io.mn4j.gnn.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.gnn.graph.Graph;
import io.mn4j.tensor.Tensors;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NpzGraphReaderTest {
    private static Path cora() throws NoSuchFileException {
        return CoraFile.find();
    }

    @Test
    void readsCora() throws Exception {
        try (Graph g = NpzGraphReader.read(cora()); PointerScope s = new PointerScope()) {
            assertEquals(2708, g.numNodes());
            assertEquals(10556, g.numEdges());
            assertEquals(1433, g.numFeatures());
            assertEquals(7, g.numClasses());
            assertNull(g.edgeWeight(), "Cora's adjacency is binary: unweighted");
            assertTrue(g.isSymmetric());
            assertEquals(140, g.trainMask().sum().item_long());
            assertEquals(500, g.valMask().sum().item_long());
            assertEquals(1000, g.testMask().sum().item_long());
            assertEquals(0, g.trainMask().logical_and(g.testMask()).sum().item_long());
            // Planetoid's public split: train nodes are 0..139.
            boolean[] train = Tensors.toBooleanArray(g.trainMask());
            for (int i = 0; i < 140; i++) assertTrue(train[i]);
            // Binary bag-of-words features, 49216 non-zeros.
            assertEquals(49216, g.features().ne(new Scalar(0.0)).sum().item_long());
            assertEquals(49216.0, g.features().sum().item_double(), 0.0);
            long[] labels = Tensors.toLongArray(g.labels());
            assertEquals(3, labels[0]);
            assertEquals(4, labels[1]);
            // First row of the adjacency in the file: node 0 has neighbours 633, 1862, 2582.
            try (Graph norm = g.withRowNormalizedFeatures()) {
                Tensor rowSums = norm.features().sum(new long[] {1}, false, null);
                long ones = rowSums.sub(new Scalar(1.0)).abs().lt(new Scalar(1e-5)).sum().item_long();
                long zeros = rowSums.eq(new Scalar(0.0)).sum().item_long();
                assertEquals(2708, ones + zeros, "every feature row sums to 1 (or is empty)");
            }
            long[] col = Tensors.toLongArray(g.col().narrow(0, 0, 3));
            assertEquals(633, col[0]);
            assertEquals(1862, col[1]);
            assertEquals(2582, col[2]);
        }
    }

    @Test
    void readsDenseAttributesAndWeightedAdjacencyWithoutSplit(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("tiny.npz");
        try (PointerScope s = new PointerScope()) {
            Map<String, Tensor> a = new LinkedHashMap<>();
            // 3 nodes: adj[0,1]=2 (edge 1->0), adj[2,0]=1, adj[2,1]=0 explicit zero (dropped).
            a.put("adj_data", Tensors.floats(new float[] {2f, 1f, 0f}));
            a.put("adj_indices", Tensors.ints(new int[] {1, 0, 1}));
            a.put("adj_indptr", Tensors.ints(new int[] {0, 1, 1, 3}));
            a.put("adj_shape", Tensors.longs(new long[] {3, 3}));
            a.put("attr_matrix", Tensors.doubles(new double[] {1, 2, 3, 4, 5, 6}, 3, 2));
            a.put("labels", Tensors.longs(new long[] {0, 1, 1}));
            Npz.write(f, a, true);
        }
        try (Graph g = NpzGraphReader.read(f); PointerScope s = new PointerScope()) {
            assertEquals(3, g.numNodes());
            assertEquals(2, g.numEdges());
            assertEquals("[2.0, 1.0]", Arrays.toString(Tensors.toFloatArray(g.edgeWeight())));
            assertEquals("[0, 1, 1, 2]", Arrays.toString(Tensors.toLongArray(g.rowptr())));
            assertEquals("[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]", Arrays.toString(Tensors.toFloatArray(g.features())));
            assertEquals(ScalarType.Float, Tensors.type(g.features()));
            assertFalse(g.hasMasks());
            assertEquals(2, g.numClasses());
        }
    }

    @Test
    void namesMissingArrays(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("bad.npz");
        try (PointerScope s = new PointerScope()) {
            Npz.write(f, Map.of("labels", Tensors.longs(new long[] {0})), false);
        }
        NpyFormatException e = assertThrows(NpyFormatException.class, () -> NpzGraphReader.read(f));
        assertTrue(e.getMessage().contains("adj_data") && e.getMessage().contains(f.toString()), e.getMessage());
        Path notZip = dir.resolve("nozip.npz");
        Files.writeString(notZip, "hello");
        NpyFormatException e2 = assertThrows(NpyFormatException.class, () -> NpzGraphReader.read(notZip));
        assertTrue(e2.getMessage().contains("zip"), e2.getMessage());
    }
}
