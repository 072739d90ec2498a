package io.mn4j.gnn.partition;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.graph.SyntheticGraphs;
import io.mn4j.gnn.io.CoraFile;
import io.mn4j.gnn.io.NpzGraphReader;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class PartitionerTest {
    static Graph cora;
    static Graph synthetic;

    @BeforeAll
    static void load() throws Exception {
        cora = NpzGraphReader.read(CoraFile.find());
        synthetic = SyntheticGraphs.plantedPartition(5000, 10, 4, 4, 9);
    }

    @AfterAll
    static void close() {
        cora.close();
        synthetic.close();
    }

    @ParameterizedTest
    @ValueSource(strings = {"metis", "ldg", "range", "random"})
    void everyNodeInExactlyOnePartitionAndBalanced(String name) {
        if (name.equals("metis")) assumeTrue(MetisPartitioner.isAvailable(), "gpmetis not installed");
        Partitioner p = Partitioners.byName(name);
        assertEquals(name, p.name());
        for (Graph g : List.of(cora, synthetic)) {
            for (int parts : new int[] {1, 2, 3, 4}) {
                int[] a = p.partition(g, parts, 5);
                assertEquals(g.numNodes(), a.length);
                long[] size = new long[parts];
                for (int x : a) {
                    assertTrue(x >= 0 && x < parts, "partition " + x);
                    size[x]++;
                }
                for (long s : size) assertTrue(s > 0, name + " left a partition empty");
                PartitionStats st = PartitionStats.compute(g, a, parts);
                // gpmetis' default tolerance is 3%; LDG's hard capacity is ceil(n/parts)*1.03.
                double limit = name.equals("range") || name.equals("random") ? 1.0 + (double) parts / g.numNodes() : 1.035 + (double) parts / g.numNodes();
                assertTrue(st.nodeBalance() <= limit, name + " " + parts + " parts: node balance " + st.nodeBalance());
                assertArrayEquals(a, p.partition(g, parts, 5), "same seed, same result");
            }
        }
    }

    @Test
    void metisAndLdgCutLessThanRandomOnCora() {
        int[] rnd = new RandomPartitioner().partition(cora, 4, 1);
        long randomCut = PartitionStats.compute(cora, rnd, 4).edgeCut();
        long ldgCut = PartitionStats.compute(cora, new LdgPartitioner().partition(cora, 4, 1), 4).edgeCut();
        assertTrue(ldgCut < randomCut / 2, "ldg cut " + ldgCut + " vs random " + randomCut);
        assumeTrue(MetisPartitioner.isAvailable(), "gpmetis not installed");
        PartitionStats metis = PartitionStats.compute(cora, new MetisPartitioner().partition(cora, 4, 1), 4);
        assertTrue(metis.edgeCut() < randomCut / 4, "metis cut " + metis.edgeCut() + " vs random " + randomCut);
        assertTrue(metis.totalCommVolume() < PartitionStats.compute(cora, rnd, 4).totalCommVolume());
    }

    @Test
    void statsOnAHandMadeGraph() {
        // Edges src->dst: 0->1, 1->0, 2->1, 2->3, 3->2, 0->3, 3->3 ; parts: {0,1} -> 0, {2,3} -> 1.
        try (Graph g = Graph.fromEdges(4, new long[] {0, 1, 2, 2, 3, 0, 3}, new long[] {1, 0, 1, 3, 2, 3, 3})) {
            PartitionStats s = PartitionStats.compute(g, new int[] {0, 0, 1, 1}, 2);
            assertEquals(2, s.edgeCut(), "2->1 and 0->3");
            assertArrayEquals(new long[] {2, 2}, s.partNodes());
            assertArrayEquals(new long[] {3, 4}, s.partEdges(), "in-edges: node0 1, node1 2 | node2 1, node3 3");
            assertEquals(1, s.commVolume(1, 0), "partition 0 needs node 2");
            assertEquals(1, s.commVolume(0, 1), "partition 1 needs node 0");
            assertEquals(2, s.totalCommVolume());
            assertEquals(1.0, s.nodeBalance(), 1e-12);
            assertEquals(4 / 3.5, s.edgeBalance(), 1e-12);
            assertThrows(IllegalArgumentException.class, () -> PartitionStats.compute(g, new int[] {0, 0, 2, 1}, 2));
            assertThrows(IllegalArgumentException.class, () -> PartitionStats.compute(g, new int[] {0, 0, 1}, 2));
        }
    }

    @Test
    void metisMissingExecutableIsAClearError() {
        MetisPartitioner m = new MetisPartitioner(Path.of("/nonexistent/gpmetis"), List.of());
        PartitioningException e = assertThrows(PartitioningException.class, () -> m.partition(cora, 2, 1));
        assertTrue(e.getMessage().contains("gpmetis") && e.getMessage().contains("metis") && e.getMessage().contains("ldg"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Partitioners.byName("kahip"));
    }

    @Test
    void metisFailureReportsItsOutput() {
        assumeTrue(MetisPartitioner.isAvailable(), "gpmetis not installed");
        MetisPartitioner m = new MetisPartitioner(null, List.of("-ptype=nonsense"));
        PartitioningException e = assertThrows(PartitioningException.class, () -> m.partition(cora, 2, 1));
        assertTrue(e.getMessage().contains("gpmetis failed"), e.getMessage());
    }
}
