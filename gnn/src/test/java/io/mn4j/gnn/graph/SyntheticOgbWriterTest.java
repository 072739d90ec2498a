package io.mn4j.gnn.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.gnn.io.OgbNodeReader;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The synthetic graph written as an OGB folder reads back, symmetrized as the programs do, as exactly the graph built in memory. */
class SyntheticOgbWriterTest {
    @TempDir
    Path tmp;

    @Test
    void readsBackAsTheGraphBuiltInMemory() throws Exception {
        // 70 000 nodes: three generator chunks, the last one partial.
        long nodes = 70_000;
        SyntheticGraphs.Options o = new SyntheticGraphs.Options().homophily(0.7).split(0.2, 0.3);
        Path dir = tmp.resolve("syn");
        long lines = SyntheticOgbWriter.write(dir, nodes, 9.3, 6, 7, 5, o);
        try (Graph expected = SyntheticGraphs.plantedPartition(nodes, 9.3, 6, 7, 5, o); Graph read = OgbNodeReader.read(dir)) {
            assertEquals(lines, read.numEdges(), "one line per edge drawn");
            assertFalse(read.isSymmetric(), "each edge stored once, as ogbn-products stores them");
            assertEquals(0, read.adjacency().diagonalCount());
            try (Graph g = read.symmetrize()) {
                assertTrue(SyntheticGraphsTest.same(expected, g), "edges, features, labels and masks");
                assertEquals(expected.numClasses(), g.numClasses());
            }
        }
    }
}
