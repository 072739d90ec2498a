package io.mn4j.gnn.partition;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.io.GraphFormatException;
import io.mn4j.gnn.io.OgbNodeReader;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The out-of-core path against the in-memory one on small OGB folders: the same LDG, range and
 * random assignments, the same statistics, and partition directories equal byte for byte, for
 * budgets from one bucket to hundreds (with buckets split again).
 */
class OutOfCoreGraphTest {
    private static final long SEED = 11;

    @TempDir
    Path tmp;

    /** The graph as the programs load an OGB folder ({@code GraphOptions.load}): symmetrized when not already, no self loops. */
    static Graph inMemory(Path dir) throws IOException {
        Graph g = OgbNodeReader.read(dir);
        if (!g.isSymmetric()) {
            Graph s = g.symmetrize();
            g.close();
            g = s;
        }
        if (g.adjacency().diagonalCount() > 0) {
            Graph s = g.withoutSelfLoops();
            g.close();
            g = s;
        }
        return g;
    }

    /** Partitions and writes both ways; asserts equal assignments, statistics and files. */
    private void assertSameAsInMemory(Path folder, Partitioner p, int parts, long budget) throws IOException {
        Path temp = tmp.resolve("temp");
        try (Graph g = inMemory(folder); OutOfCoreGraph oc = OutOfCoreGraph.open(folder, -1, SEED, budget, temp)) {
            assertEquals(g.numNodes(), oc.numNodes());
            assertEquals(g.numEdges(), oc.numEdges());
            int[] a = p.partition(g, parts, SEED);
            assertArrayEquals(a, oc.partition(p, parts), p.name() + " assignment");
            PartitionStats expected = PartitionStats.compute(g, a, parts);
            PartitionStats got = oc.stats(a, parts);
            assertEquals(expected.toString(), got.toString());
            assertArrayEquals(expected.commVolume(), got.commVolume());
            Path mem = tmp.resolve("mem-" + p.name() + parts + "-" + budget);
            Path ooc = tmp.resolve("ooc-" + p.name() + parts + "-" + budget);
            PartitionWriter.write(mem, g, a, parts, p.name(), SEED);
            oc.write(ooc, a, parts, p.name());
            assertSameFiles(mem, ooc);
        }
        try (Stream<Path> left = Files.list(temp)) {
            assertEquals(List.of(), left.toList(), "temporary files are deleted");
        }
    }

    static void assertSameFiles(Path expected, Path actual) throws IOException {
        List<Path> e = files(expected), a = files(actual);
        assertEquals(e, a, "the same files");
        for (Path f : e) {
            assertArrayEquals(Files.readAllBytes(expected.resolve(f)), Files.readAllBytes(actual.resolve(f)), f + " byte for byte");
        }
    }

    private static List<Path> files(Path dir) throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(Files::isRegularFile).map(dir::relativize).sorted().toList();
        }
    }

    /** 64 KiB sorts 6144 entries at once: several buckets for this folder; 64 MiB: one. */
    @ParameterizedTest
    @ValueSource(longs = {64 << 10, 256 << 10, 64 << 20})
    void ldgAndTheFilesAreThoseOfTheInMemoryPath(long budget) throws IOException {
        OgbTestFolders.Spec s = new OgbTestFolders.Spec();
        s.nodes = 2000;
        s.lines = 12000;
        Path folder = OgbTestFolders.write(tmp.resolve("g"), s);
        for (int parts : new int[] {1, 3, 4}) {
            assertSameAsInMemory(folder, new LdgPartitioner(), parts, budget);
        }
    }

    @Test
    void rangeAndRandomToo() throws IOException {
        Path folder = OgbTestFolders.write(tmp.resolve("g"), new OgbTestFolders.Spec());
        assertSameAsInMemory(folder, new RangePartitioner(), 3, 64 << 10);
        assertSameAsInMemory(folder, new RandomPartitioner(), 5, 64 << 10);
    }

    /** No counts (the node count from the features, the bucket count guessed from the file's size), plain .csv, no labels. */
    @Test
    void folderWithoutCountsOrLabels() throws IOException {
        OgbTestFolders.Spec s = new OgbTestFolders.Spec();
        s.counts = false;
        s.gzip = false;
        s.labels = false;
        s.lines = 5000;
        Path folder = OgbTestFolders.write(tmp.resolve("g"), s);
        assertSameAsInMemory(folder, new LdgPartitioner(), 4, 64 << 10);
        s.features = 0;
        Path bare = OgbTestFolders.write(tmp.resolve("bare"), s);
        assertSameAsInMemory(bare, new LdgPartitioner(), 2, 64 << 10);
    }

    /** A file with every edge both ways is not symmetrized in memory; without repeats the result is the same. */
    @Test
    void alreadySymmetricFile() throws IOException {
        OgbTestFolders.Spec s = new OgbTestFolders.Spec();
        s.bothDirections = true;
        s.messy = false;
        Path folder = OgbTestFolders.write(tmp.resolve("g"), s);
        try (Graph g = OgbNodeReader.read(folder)) {
            assertTrue(g.isSymmetric());
        }
        assertSameAsInMemory(folder, new LdgPartitioner(), 3, 64 << 10);
    }

    /** With repeats, the in-memory graph keeps them as parallel edges: refused, naming the file and an edge. */
    @Test
    void symmetricFileWithRepeatsIsRefused() throws IOException {
        OgbTestFolders.Spec s = new OgbTestFolders.Spec();
        s.bothDirections = true;
        Path folder = OgbTestFolders.write(tmp.resolve("g"), s);
        Path temp = tmp.resolve("temp");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> OutOfCoreGraph.open(folder, -1, SEED, 1 << 20, temp));
        assertTrue(e.getMessage().contains("edge.csv.gz: every edge is stored in both directions"), e.getMessage());
        assertTrue(e.getMessage().contains("partition in memory"), e.getMessage());
        assertTempEmpty(temp);
    }

    @Test
    void badLineIsNamedAndTemporaryFilesGo() throws IOException {
        Path folder = OgbTestFolders.write(tmp.resolve("g"), new OgbTestFolders.Spec());
        Path edges = folder.resolve("raw/edge.csv.gz");
        OgbTestFolders.text(edges, true, "0,1\n1,2\n2,x\n");
        Files.delete(folder.resolve("raw/num-edge-list.csv.gz"));
        Path temp = tmp.resolve("temp");
        GraphFormatException e = assertThrows(GraphFormatException.class, () -> OutOfCoreGraph.open(folder, -1, SEED, 1 << 20, temp));
        assertTrue(e.getMessage().startsWith(edges + ":3: column 2"), e.getMessage());
        assertTempEmpty(temp);
        OgbTestFolders.text(edges, true, "0,1\n1,300\n");
        e = assertThrows(GraphFormatException.class, () -> OutOfCoreGraph.open(folder, -1, SEED, 1 << 20, temp));
        assertTrue(e.getMessage().startsWith(edges + ":2: edge 1,300: node ids must be in [0, 300) (num-node-list)"), e.getMessage());
        assertTempEmpty(temp);
    }

    @Test
    void metisNeedsTheGraphInMemory() throws IOException {
        Path folder = OgbTestFolders.write(tmp.resolve("g"), new OgbTestFolders.Spec());
        try (OutOfCoreGraph oc = OutOfCoreGraph.open(folder, -1, SEED, 1 << 20, tmp.resolve("temp"))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> oc.partition(new MetisPartitioner(), 2));
            assertTrue(e.getMessage().contains("metis partitioner needs the whole graph in memory"), e.getMessage());
        }
    }

    private static void assertTempEmpty(Path temp) throws IOException {
        try (Stream<Path> left = Files.list(temp)) {
            assertEquals(List.of(), left.toList(), "temporary files are deleted");
        }
    }
}
