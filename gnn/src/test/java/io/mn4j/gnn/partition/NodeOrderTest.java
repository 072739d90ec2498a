package io.mn4j.gnn.partition;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.graph.SyntheticGraphs;
import io.mn4j.gnn.kernel.CsrAggregation;
import io.mn4j.tensor.Tensors;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Node orders: a permutation of each partition, exact round trips, the same aggregation mapped back, and locality restored. */
class NodeOrderTest {
    @TempDir
    Path tmp;

    @Test
    void reorderedPartitionsRoundTripExactly() throws Exception {
        try (Graph g = SyntheticGraphs.plantedPartition(900, 7, 3, 5, 2)) {
            int[] a = new LdgPartitioner().partition(g, 3, 1);
            PartitionWriter.write(tmp.resolve("rcm"), g, a, 3, "ldg", 1, NodeOrder.RCM);
            PartitionFilesTest.assertExactRoundTrip(g, tmp.resolve("rcm"), 3, a);
        }
    }

    @Test
    void aggregationMappedBackIsTheSame() {
        try (Graph g = SyntheticGraphs.plantedPartition(1500, 9, 4, 6, 3); PointerScope s = new PointerScope()) {
            int[] a = new RandomPartitioner().partition(g, 2, 5);
            Tensor want;
            try (CsrAggregation agg = CsrAggregation.inEdges(g)) {
                want = agg.forward(g.features());
            }
            for (NodeOrder order : NodeOrder.values()) {
                PartitionBuilder cut = new PartitionBuilder(g, a, 2, "random", 5, order);
                List<PartitionData> parts = new ArrayList<>();
                try {
                    TensorVector x = new TensorVector();
                    for (int k = 0; k < 2; k++) {
                        parts.add(cut.part(k));
                        x.push_back(parts.get(k).features());
                    }
                    // The features of the whole graph by new id: the partitions' in turn.
                    Tensor byNewId = torch.cat(x);
                    for (PartitionData p : parts) {
                        try (CsrAggregation agg = CsrAggregation.of(p.adjacency())) {
                            Tensor got = agg.forward(byNewId);
                            Tensor expect = want.index_select(0, p.originalIds());
                            double diff = got.sub(expect).abs().max().item_double();
                            assertTrue(diff < 1e-5, order + ", part " + p.part() + ": differs by " + diff);
                        }
                    }
                } finally {
                    parts.forEach(PartitionData::close);
                }
            }
        }
    }

    @Test
    void rcmIsAPermutationAndNoneKeepsTheOrder() {
        try (Graph g = SyntheticGraphs.plantedPartition(800, 5, 2, 0, 4)) {
            long[] rp = g.adjacency().rowptrArray();
            int[] col = g.adjacency().colArray();
            long[] nodes = new long[400];
            for (int i = 0; i < nodes.length; i++) nodes[i] = 2L * i + 1;
            assertArrayEquals(nodes, NodeOrder.NONE.order(rp, col, nodes));
            long[] rcm = NodeOrder.RCM.order(rp, col, nodes);
            long[] sorted = rcm.clone();
            Arrays.sort(sorted);
            assertArrayEquals(nodes, sorted, "the same nodes, each once");
        }
    }

    /** A 40 x 40 grid with shuffled ids: RCM brings every node's neighbours back within about one row of the grid. */
    @Test
    void rcmRestoresTheLocalityOfAShuffledGrid() {
        int side = 40, n = side * side;
        int[] shuffled = new int[n];
        for (int i = 0; i < n; i++) shuffled[i] = i;
        SplittableRandom r = new SplittableRandom(7);
        for (int i = n - 1; i > 0; i--) {
            int j = r.nextInt(i + 1), t = shuffled[i];
            shuffled[i] = shuffled[j];
            shuffled[j] = t;
        }
        List<long[]> edges = new ArrayList<>();
        for (int y = 0; y < side; y++) {
            for (int x = 0; x < side; x++) {
                if (x + 1 < side) edges.add(new long[] {shuffled[y * side + x], shuffled[y * side + x + 1]});
                if (y + 1 < side) edges.add(new long[] {shuffled[y * side + x], shuffled[(y + 1) * side + x]});
            }
        }
        long[] src = new long[2 * edges.size()], dst = new long[2 * edges.size()];
        for (int e = 0; e < edges.size(); e++) {
            src[2 * e] = dst[2 * e + 1] = edges.get(e)[0];
            dst[2 * e] = src[2 * e + 1] = edges.get(e)[1];
        }
        try (Graph g = Graph.fromEdges(n, src, dst)) {
            PartitionBuilder none = new PartitionBuilder(g, new int[n], 1, "whole", 0, NodeOrder.NONE);
            PartitionBuilder rcm = new PartitionBuilder(g, new int[n], 1, "whole", 0, NodeOrder.RCM);
            long before = bandwidth(none), after = bandwidth(rcm);
            assertTrue(before > n / 2, "a shuffled grid has neighbours far apart: " + before);
            assertTrue(after <= 2 * side, "RCM's bandwidth " + after + " should be about the grid's side " + side);
        }
    }

    @Test
    void namesParse() {
        assertEquals(NodeOrder.RCM, NodeOrder.byName("rcm"));
        assertEquals(NodeOrder.NONE, NodeOrder.byName("NONE"));
        assertEquals("rcm", NodeOrder.RCM.label());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> NodeOrder.byName("bfs"));
        assertTrue(e.getMessage().contains("known: none, rcm"), e.getMessage());
    }

    /** The largest |row - column| of the one partition's matrix (ids are new ids). */
    private static long bandwidth(PartitionBuilder b) {
        try (PartitionData p = b.part(0)) {
            long[] rp = Tensors.toLongArray(p.rowptr());
            long[] col = Tensors.toLongArray(p.col());
            long max = 0;
            for (int i = 0; i + 1 < rp.length; i++) {
                for (long e = rp[i]; e < rp[i + 1]; e++) max = Math.max(max, Math.abs(col[(int) e] - i));
            }
            return max;
        }
    }
}
