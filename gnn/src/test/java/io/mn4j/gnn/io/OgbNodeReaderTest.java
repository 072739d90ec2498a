package io.mn4j.gnn.io;

import static io.mn4j.gnn.io.LabelCheckTest.assertMessage;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.gnn.graph.Graph;
import io.mn4j.tensor.Tensors;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** OGB node-property folders written here in the ogb package's layout: what is read, and clear errors for bad files. */
class OgbNodeReaderTest {
    @TempDir
    Path tmp;

    /** A 5-node dataset: a directed path 0->1->2->3 and 4->0, 2 features, node 3 unlabelled, split "time". */
    private Path dataset(String name) throws IOException {
        Path dir = tmp.resolve(name);
        gz(dir.resolve("raw/edge.csv.gz"), "0,1\n1,2\n2,3\n4,0\n");
        gz(dir.resolve("raw/num-node-list.csv.gz"), "5\n");
        gz(dir.resolve("raw/num-edge-list.csv.gz"), "4\n");
        gz(dir.resolve("raw/node-feat.csv.gz"), "0.5,-1.25\n1e-3,2\n-0.0,3.5\n0.1,0.2\n7,8.000001\n");
        gz(dir.resolve("raw/node-label.csv.gz"), "2\n0.0\n1\nnan\n2\n");
        gz(dir.resolve("split/time/train.csv.gz"), "0\n1\n");
        gz(dir.resolve("split/time/valid.csv.gz"), "2\n");
        gz(dir.resolve("split/time/test.csv.gz"), "3\n4\n");
        return dir;
    }

    private static void gz(Path file, String text) throws IOException {
        Files.createDirectories(file.getParent());
        try (OutputStream o = new GZIPOutputStream(Files.newOutputStream(file))) {
            o.write(text.getBytes(StandardCharsets.US_ASCII));
        }
    }

    @Test
    void readsGraphFeaturesLabelsAndSplit() throws Exception {
        Path dir = dataset("my_graph");
        assertTrue(OgbNodeReader.isOgbFolder(dir));
        assertFalse(OgbNodeReader.isOgbFolder(dir.resolve("raw")));
        try (Graph g = OgbNodeReader.read(dir)) {
            assertEquals(5, g.numNodes());
            assertEquals(4, g.numEdges());
            assertFalse(g.isSymmetric(), "edges are kept as stored, src -> dst");
            // In-edge CSR: row 1 holds source 0, row 0 holds source 4.
            assertArrayEquals(new long[] {0, 1, 2, 3, 4, 4}, Tensors.toLongArray(g.rowptr()));
            assertArrayEquals(new long[] {4, 0, 1, 2}, Tensors.toLongArray(g.col()));
            assertArrayEquals(new float[] {0.5f, -1.25f, 1e-3f, 2f, -0.0f, 3.5f, 0.1f, 0.2f, 7f, 8.000001f},
                    Tensors.toFloatArray(g.features()));
            assertEquals(Float.floatToRawIntBits(-0.0f), Float.floatToRawIntBits(Tensors.toFloatArray(g.features())[4]));
            assertArrayEquals(new long[] {2, 0, 1, Graph.UNLABELLED, 2}, Tensors.toLongArray(g.labels()));
            assertEquals(3, g.numClasses());
            assertArrayEquals(new boolean[] {true, true, false, false, false}, Tensors.toBooleanArray(g.trainMask()));
            assertArrayEquals(new boolean[] {false, false, true, false, false}, Tensors.toBooleanArray(g.valMask()));
            assertArrayEquals(new boolean[] {false, false, false, true, true}, Tensors.toBooleanArray(g.testMask()));
            try (Graph u = g.symmetrize()) {
                assertEquals(8, u.numEdges());
            }
        }
    }

    @Test
    void knownDatasetsDeclareTheirClassesAndSplit() throws Exception {
        Path dir = dataset("ogbn_arxiv");
        gz(dir.resolve("split/other/train.csv.gz"), "4\n");
        try (Graph g = OgbNodeReader.read(dir)) {
            assertEquals(40, g.numClasses(), "ogbn-arxiv has 40 classes, whatever labels occur");
            assertArrayEquals(new boolean[] {true, true, false, false, false}, Tensors.toBooleanArray(g.trainMask()), "the known split, time");
        }
        gz(dir.resolve("raw/node-label.csv.gz"), "2\n0\n40\nnan\n2\n");
        GraphFormatException e = assertThrows(GraphFormatException.class, () -> OgbNodeReader.read(dir));
        assertMessage(e, "node-label.csv.gz", "line 3", "label 40", "40 classes");
    }

    @Test
    void withoutCountFilesTheRowsGiveTheNodes() throws Exception {
        Path dir = dataset("plain");
        Files.delete(dir.resolve("raw/num-node-list.csv.gz"));
        Files.delete(dir.resolve("raw/num-edge-list.csv.gz"));
        Files.delete(dir.resolve("raw/node-feat.csv.gz"));
        // Uncompressed files are read as well.
        Files.writeString(dir.resolve("raw/node-feat.csv"), "1,2\n3,4\n5,6\n7,8\n9,10\n11,12\n");
        gz(dir.resolve("raw/node-label.csv.gz"), "2\n0\n1\n1\n2\n0\n");
        try (Graph g = OgbNodeReader.read(dir)) {
            assertEquals(6, g.numNodes(), "node 5 has no edge: the feature rows count it");
            assertEquals(12, g.features().numel());
            assertEquals(12f, Tensors.toFloatArray(g.features())[11]);
        }
    }

    @Test
    void manySplitsNeedAName() throws Exception {
        Path dir = dataset("two_splits");
        gz(dir.resolve("split/random/train.csv.gz"), "4\n");
        gz(dir.resolve("split/random/valid.csv.gz"), "3\n");
        gz(dir.resolve("split/random/test.csv.gz"), "0\n");
        assertMessage(assertThrows(GraphFormatException.class, () -> OgbNodeReader.read(dir)), "several splits [random, time]");
        try (Graph g = OgbNodeReader.read(dir, "random", -1)) {
            assertArrayEquals(new boolean[] {false, false, false, false, true}, Tensors.toBooleanArray(g.trainMask()));
        }
    }

    @Test
    void missingSplitNamesTheFile() throws Exception {
        Path dir = dataset("no_valid");
        Files.delete(dir.resolve("split/time/valid.csv.gz"));
        assertMessage(assertThrows(NoSuchFileException.class, () -> OgbNodeReader.read(dir)), "split/time/valid.csv.gz");
        Path none = dataset("no_split");
        for (String f : new String[] {"train", "valid", "test"}) {
            Files.delete(none.resolve("split/time/" + f + ".csv.gz"));
        }
        Files.delete(none.resolve("split/time"));
        Files.delete(none.resolve("split"));
        assertMessage(assertThrows(NoSuchFileException.class, () -> OgbNodeReader.read(none)), "no_split/split", "missing split folder");
    }

    @Test
    void rowOfTheWrongWidthNamesFileAndLine() throws Exception {
        Path dir = dataset("short_row");
        gz(dir.resolve("raw/node-feat.csv.gz"), "0.5,1\n1,2\n3\n4,5\n6,7\n");
        assertMessage(assertThrows(GraphFormatException.class, () -> OgbNodeReader.read(dir)), "node-feat.csv.gz:3:", "only 1 column");
        gz(dir.resolve("raw/node-feat.csv.gz"), "0.5,1\n1,2\n3,4\n4,5,6\n6,7\n");
        assertMessage(assertThrows(GraphFormatException.class, () -> OgbNodeReader.read(dir)), "node-feat.csv.gz:4:", "more than 2 columns");
        gz(dir.resolve("raw/node-feat.csv.gz"), "0.5,1\n1,2\n3,4\n4,x5\n6,7\n");
        assertMessage(assertThrows(GraphFormatException.class, () -> OgbNodeReader.read(dir)), "node-feat.csv.gz:4:", "'x5' is not a number");
        gz(dir.resolve("raw/node-feat.csv.gz"), "0.5,1\n1,2\n3,4\n4,5\n");
        assertMessage(assertThrows(GraphFormatException.class, () -> OgbNodeReader.read(dir)), "node-feat.csv.gz", "4 rows of features for 5 nodes");
        gz(dir.resolve("raw/edge.csv.gz"), "0,1\n1,2\n2\n4,0\n");
        assertMessage(assertThrows(GraphFormatException.class, () -> OgbNodeReader.read(dir)), "edge.csv.gz:3:", "only 1 column");
    }

    @Test
    void badEdgesAndSplitIdsNameFileAndLine() throws Exception {
        Path dir = dataset("bad_ids");
        gz(dir.resolve("raw/edge.csv.gz"), "0,1\n1,5\n2,3\n4,0\n");
        assertMessage(assertThrows(GraphFormatException.class, () -> OgbNodeReader.read(dir)), "edge.csv.gz:2:", "edge 1,5", "[0, 5)");
        gz(dir.resolve("raw/edge.csv.gz"), "0,1\n1,2\n2,3\n");
        assertMessage(assertThrows(GraphFormatException.class, () -> OgbNodeReader.read(dir)), "3 edges, but num-edge-list says 4");
        gz(dir.resolve("raw/edge.csv.gz"), "0,1\n1,2\n2,3\n4,0\n");
        gz(dir.resolve("split/time/test.csv.gz"), "3\n9\n");
        assertMessage(assertThrows(GraphFormatException.class, () -> OgbNodeReader.read(dir)), "test.csv.gz:2:", "node 9");
    }

    @Test
    void badLabelsNameFileAndLine() throws Exception {
        Path dir = dataset("bad_labels");
        gz(dir.resolve("raw/node-label.csv.gz"), "2\n0\n-1\nnan\n2\n");
        assertMessage(assertThrows(GraphFormatException.class, () -> OgbNodeReader.read(dir)), "node-label.csv.gz", "line 3 (node 2)",
                "label -1");
        gz(dir.resolve("raw/node-label.csv.gz"), "2\n0\n1.5\nnan\n2\n");
        assertMessage(assertThrows(GraphFormatException.class, () -> OgbNodeReader.read(dir)), "node-label.csv.gz:3:", "1.5 is not a class");
        gz(dir.resolve("raw/node-label.csv.gz"), "2\n0\n1000000\nnan\n2\n");
        assertMessage(assertThrows(GraphFormatException.class, () -> OgbNodeReader.read(dir)), "line 3 (node 2)", "1000001 classes for 3");
        try (Graph g = OgbNodeReader.read(dir, null, 1000001)) {
            assertEquals(1000001, g.numClasses(), "a declared class count allows sparse ids");
        }
        gz(dir.resolve("raw/node-label.csv.gz"), "2,1\n0,0\n1,1\n0,1\n2,0\n");
        assertMessage(assertThrows(GraphFormatException.class, () -> OgbNodeReader.read(dir)), "node-label.csv.gz:1:", "2 labels per node",
                "multi-label");
    }

    @Test
    void truncatedGzipNamesTheFile() throws Exception {
        Path dir = dataset("truncated");
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 20000; i++) {
            sb.append(i % 5).append(',').append((i * 7) % 5).append('\n');
        }
        gz(dir.resolve("raw/edge.csv.gz"), sb.toString());
        Files.delete(dir.resolve("raw/num-edge-list.csv.gz"));
        Path edges = dir.resolve("raw/edge.csv.gz");
        byte[] whole = Files.readAllBytes(edges);
        Files.write(edges, Arrays.copyOf(whole, whole.length / 2));
        assertMessage(assertThrows(GraphFormatException.class, () -> OgbNodeReader.read(dir)), "edge.csv.gz", "ends early or is corrupt");
        Files.writeString(edges, "0,1\n");
        assertMessage(assertThrows(GraphFormatException.class, () -> OgbNodeReader.read(dir)), "edge.csv.gz", "not a gzip file");
    }

    @Test
    void notAnOgbFolder() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("empty/raw"));
        assertMessage(assertThrows(GraphFormatException.class, () -> OgbNodeReader.read(dir.getParent())), "not an OGB node-property",
                "raw/edge.csv.gz");
        Files.createDirectories(dir.resolve("relations"));
        assertMessage(assertThrows(GraphFormatException.class, () -> OgbNodeReader.read(dir.getParent())), "heterogeneous");
    }

    @Test
    void withoutFeaturesOrLabels() throws Exception {
        Path dir = dataset("structure");
        Files.delete(dir.resolve("raw/node-feat.csv.gz"));
        Files.delete(dir.resolve("raw/node-label.csv.gz"));
        try (Graph g = OgbNodeReader.read(dir)) {
            assertNull(g.features());
            assertNull(g.labels());
            assertEquals(5, g.numNodes());
            assertTrue(g.hasMasks());
        }
    }
}
