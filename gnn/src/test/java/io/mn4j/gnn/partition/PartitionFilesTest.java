package io.mn4j.gnn.partition;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.gnn.graph.Csr;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.graph.SyntheticGraphs;
import io.mn4j.gnn.io.CoraFile;
import io.mn4j.gnn.io.Npy;
import io.mn4j.gnn.io.NpzGraphReader;
import io.mn4j.tensor.Tensors;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

class PartitionFilesTest {
    @TempDir
    Path tmp;

    static Partitioner metisOrLdg() {
        return MetisPartitioner.isAvailable() ? new MetisPartitioner() : new LdgPartitioner();
    }

    /**
     * Loads every partition and checks the union is exactly the original graph: each node once,
     * with its features, label and masks; each in-edge (with its weight) in its destination's
     * partition, sources renumbered consistently.
     */
    static void assertExactRoundTrip(Graph g, Path dir, int parts, int[] assignment) throws IOException {
        int n = (int) g.numNodes();
        long[] newId = PartitionReader.newIds(dir);
        long[] rp = g.adjacency().rowptrArray();
        int[] col = g.adjacency().colArray();
        double[] w = g.adjacency().weightArrayDouble();
        int f = (int) g.numFeatures();
        float[] x = g.hasFeatures() ? Tensors.toFloatArray(g.features()) : null;
        long[] y = g.hasLabels() ? Tensors.toLongArray(g.labels()) : null;
        boolean[][] masks = g.hasMasks()
                ? new boolean[][] {Tensors.toBooleanArray(g.trainMask()), Tensors.toBooleanArray(g.valMask()), Tensors.toBooleanArray(g.testMask())}
                : null;
        boolean[] seen = new boolean[n];
        long edges = 0;
        for (int k = 0; k < parts; k++) {
            try (PartitionData p = PartitionReader.load(dir, k, parts); PointerScope s = new PointerScope()) {
                assertEquals(k, p.part());
                long[] ids = Tensors.toLongArray(p.originalIds());
                long[] prp = Tensors.toLongArray(p.rowptr());
                long[] pcol = Tensors.toLongArray(p.col());
                double[] pw = p.edgeWeight() == null ? null : Tensors.toDoubleArray(p.edgeWeight());
                float[] px = x == null ? null : Tensors.toFloatArray(p.features());
                long[] py = y == null ? null : Tensors.toLongArray(p.labels());
                boolean[][] pm = masks == null ? null
                        : new boolean[][] {Tensors.toBooleanArray(p.trainMask()), Tensors.toBooleanArray(p.valMask()), Tensors.toBooleanArray(p.testMask())};
                for (int i = 0; i < ids.length; i++) {
                    int v = (int) ids[i];
                    assertTrue(!seen[v], "node " + v + " owned twice");
                    seen[v] = true;
                    assertEquals(k, assignment[v], "node in the partition the assignment says");
                    assertEquals(p.nodeOffset() + i, newId[v]);
                    assertEquals(k, p.owner(newId[v]));
                    assertTrue(p.isLocal(newId[v]));
                    if (px != null) assertArrayEquals(Arrays.copyOfRange(x, v * f, v * f + f), Arrays.copyOfRange(px, i * f, i * f + f));
                    if (py != null) assertEquals(y[v], py[i]);
                    if (pm != null) for (int m = 0; m < 3; m++) assertEquals(masks[m][v], pm[m][i]);
                    // In-edges of v: compare (new source id, weight) multisets.
                    List<String> expect = new ArrayList<>(), got = new ArrayList<>();
                    for (long e = rp[v]; e < rp[v + 1]; e++) expect.add(newId[col[(int) e]] + "/" + (w == null ? 1.0 : w[(int) e]));
                    for (long e = prp[i]; e < prp[i + 1]; e++) got.add(pcol[(int) e] + "/" + (pw == null ? 1.0 : pw[(int) e]));
                    expect.sort(null);
                    got.sort(null);
                    assertEquals(expect, got, "in-edges of node " + v);
                    edges += prp[i + 1] - prp[i];
                }
            }
        }
        for (int v = 0; v < n; v++) assertTrue(seen[v], "node " + v + " in no partition");
        assertEquals(g.numEdges(), edges);
    }

    @Test
    void coraRoundTripIsExact() throws Exception {
        Path dir = tmp.resolve("cora-3");
        try (Graph g = NpzGraphReader.read(CoraFile.find())) {
            Partitioner p = metisOrLdg();
            int[] a = p.partition(g, 3, 4);
            PartitionMetadata m = PartitionWriter.write(dir, g, a, 3, p.name(), 4);
            PartitionStats st = PartitionStats.compute(g, a, 3);
            assertEquals(m, PartitionReader.readMetadata(dir), "metadata survives JSON");
            assertEquals(3, m.numParts());
            assertEquals(2708, m.numNodes());
            assertEquals(10556, m.numEdges());
            assertEquals(1433, m.featureSize());
            assertEquals(7, m.numClasses());
            assertEquals(p.name(), m.method());
            assertEquals(st.edgeCut(), m.edgeCut());
            assertEquals(st.totalCommVolume(), m.commVolume());
            assertArrayEquals(st.partNodes(), m.partNodeCounts());
            assertArrayEquals(st.partEdges(), m.partEdgeCounts());
            assertExactRoundTrip(g, dir, 3, a);
        }
    }

    @Test
    void weightedGraphWithoutNodeDataRoundTrips() throws Exception {
        Path dir = tmp.resolve("w");
        try (Graph base = SyntheticGraphs.plantedPartition(700, 6, 3, 2, 1); PointerScope s = new PointerScope()) {
            Tensor w = org.bytedeco.pytorch.global.torch.rand(new long[] {base.numEdges()}, new TensorOptions(ScalarType.Float));
            try (Csr a = base.adjacency().withWeight(w); Graph g = Graph.builder(a).build()) {
                int[] assign = new LdgPartitioner().partition(g, 4, 2);
                PartitionMetadata m = PartitionWriter.write(dir, g, assign, 4, "ldg", 2);
                assertTrue(m.weighted());
                assertEquals(0, m.featureSize());
                assertExactRoundTrip(g, dir, 4, assign);
                try (PartitionData p = PartitionReader.load(dir, 1, 4)) {
                    assertNull(p.features());
                    assertNull(p.labels());
                    assertNull(p.trainMask());
                }
            }
            // float64 weights keep their type and exact values.
            Tensor w64 = org.bytedeco.pytorch.global.torch.rand(new long[] {base.numEdges()}, new TensorOptions(ScalarType.Double));
            try (Csr a = base.adjacency().withWeight(w64); Graph g = Graph.builder(a).build()) {
                int[] assign = new RandomPartitioner().partition(g, 3, 2);
                PartitionWriter.write(tmp.resolve("w64"), g, assign, 3, "random", 2);
                assertExactRoundTrip(g, tmp.resolve("w64"), 3, assign);
                try (PartitionData p = PartitionReader.load(tmp.resolve("w64"), 0, 3)) {
                    assertEquals(ScalarType.Double, Tensors.type(p.edgeWeight()));
                }
            }
            // A partition with no nodes at all.
            int[] allInZero = new int[(int) base.numNodes()];
            PartitionWriter.write(tmp.resolve("empty-part"), base, allInZero, 2, "manual", 0);
            assertExactRoundTrip(base, tmp.resolve("empty-part"), 2, allInZero);
        }
    }

    @Test
    void loadingOnePartitionReadsOnlyItsFolder() throws Exception {
        Path dir = tmp.resolve("only");
        try (Graph g = SyntheticGraphs.plantedPartition(500, 4, 2, 3, 1)) {
            PartitionWriter.write(dir, g, new RangePartitioner().partition(g, 3, 0), 3, "range", 0);
        }
        deleteTree(dir.resolve("part-0"));
        deleteTree(dir.resolve("part-2"));
        try (PartitionData p = PartitionReader.load(dir, 1, 3)) {
            assertEquals(p.metadata().nodes(1), p.numLocalNodes());
            assertEquals(p.metadata().offset(1), p.nodeOffset());
        }
        assertMessage(() -> PartitionReader.load(dir, 0, 3), "missing directory " + dir.resolve("part-0"));
    }

    @Test
    void corruptMissingAndMismatchedFilesGiveClearErrors() throws Exception {
        Path good = tmp.resolve("good");
        try (Graph g = SyntheticGraphs.plantedPartition(400, 4, 3, 5, 1)) {
            PartitionWriter.write(good, g, new RandomPartitioner().partition(g, 2, 0), 2, "random", 0);
        }
        // Wrong number of parts for the job.
        assertMessage(() -> PartitionReader.load(good, 0, 4), "split into 2 partitions but the job expects 4");
        assertMessage(() -> PartitionReader.load(good, 2, 2), "partition 2 requested but there are 2");
        // Wrong format version.
        Path v2 = copy(good, "v2");
        rewriteMetadata(v2, "\"formatVersion\" : 1", "\"formatVersion\" : 2");
        assertMessage(() -> PartitionReader.load(v2, 0, 2), v2.resolve("metadata.json") + ": partition format version 2 is not supported");
        // Missing and broken metadata.
        Path nometa = copy(good, "nometa");
        Files.delete(nometa.resolve("metadata.json"));
        assertMessage(() -> PartitionReader.load(nometa, 0, 2), "missing " + nometa.resolve("metadata.json"));
        Path badjson = copy(good, "badjson");
        Files.writeString(badjson.resolve("metadata.json"), "{\"format\": ");
        assertMessage(() -> PartitionReader.load(badjson, 0, 2), badjson.resolve("metadata.json") + ": not valid JSON");
        Path nofield = copy(good, "nofield");
        rewriteMetadata(nofield, "\"numEdges\"", "\"numEdgesX\"");
        assertMessage(() -> PartitionReader.load(nofield, 0, 2), "missing field 'numEdges'");
        // Missing array file.
        Path miss = copy(good, "miss");
        Files.delete(miss.resolve("part-1/col.npy"));
        assertMessage(() -> PartitionReader.load(miss, 1, 2), "missing file " + miss.resolve("part-1/col.npy") + " (partition 1");
        // Truncated array.
        Path trunc = copy(good, "trunc");
        Path feat = trunc.resolve("part-0/features.npy");
        byte[] bytes = Files.readAllBytes(feat);
        Files.write(feat, Arrays.copyOf(bytes, bytes.length - 10));
        assertMessage(() -> PartitionReader.load(trunc, 0, 2), feat + ": truncated");
        // Shape that disagrees with the metadata.
        Path shape = copy(good, "shape");
        try (PointerScope s = new PointerScope()) {
            Npy.write(shape.resolve("part-1/labels.npy"), Tensors.longs(new long[] {1, 2, 3}));
        }
        assertMessage(() -> PartitionReader.load(shape, 1, 2), shape.resolve("part-1/labels.npy") + ": shape [3], expected [");
        // Wrong type.
        Path type = copy(good, "type");
        try (PointerScope s = new PointerScope()) {
            long n1 = PartitionReader.readMetadata(type).nodes(1);
            Npy.write(type.resolve("part-1/labels.npy"), Tensors.zeros(ScalarType.Int, n1));
        }
        assertMessage(() -> PartitionReader.load(type, 1, 2), type.resolve("part-1/labels.npy") + ": type <i4, expected <i8");
        // Edge sources outside the graph.
        Path range = copy(good, "range");
        try (PointerScope s = new PointerScope()) {
            Tensor c = Npy.read(range.resolve("part-0/col.npy"));
            c.narrow(0, 0, 1).fill_(new Scalar(400));
            Npy.write(range.resolve("part-0/col.npy"), c);
        }
        assertMessage(() -> PartitionReader.load(range, 0, 2), range.resolve("part-0/col.npy") + ": ids must be in [0,400)");
        // The good directory still loads.
        try (PartitionData p = PartitionReader.load(good, 0, 2)) {
            assertEquals(2, p.numParts());
        }
    }

    private static void assertMessage(Executable ex, String expected) {
        PartitionFormatException e = assertThrows(PartitionFormatException.class, ex);
        assertTrue(e.getMessage().contains(expected), "expected '" + expected + "' in: " + e.getMessage());
    }

    private Path copy(Path src, String name) throws IOException {
        Path dst = tmp.resolve(name);
        try (Stream<Path> files = Files.walk(src)) {
            for (Path p : (Iterable<Path>) files::iterator) Files.copy(p, dst.resolve(src.relativize(p).toString()));
        }
        return dst;
    }

    private static void rewriteMetadata(Path dir, String from, String to) throws IOException {
        Path f = dir.resolve("metadata.json");
        String s = Files.readString(f);
        assertTrue(s.contains(from), s);
        Files.writeString(f, s.replace(from, to));
    }

    private static void deleteTree(Path p) throws IOException {
        try (Stream<Path> files = Files.walk(p)) {
            for (Path q : (Iterable<Path>) files.sorted(Comparator.reverseOrder())::iterator) Files.delete(q);
        }
    }
}
