package io.mn4j.gnn.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.tensor.Tensors;
import java.util.concurrent.ForkJoinPool;
import org.bytedeco.javacpp.PointerScope;
import org.junit.jupiter.api.Test;

class SyntheticGraphsTest {
    static final int N = 20_000;

    static boolean same(Graph a, Graph b) {
        return a.rowptr().equal(b.rowptr()) && a.col().equal(b.col()) && a.features().equal(b.features()) && a.labels().equal(b.labels())
                && a.trainMask().equal(b.trainMask()) && a.valMask().equal(b.valMask()) && a.testMask().equal(b.testMask());
    }

    @Test
    void reproducibleFromTheSeedWhateverTheThreadCount() throws Exception {
        try (Graph a = SyntheticGraphs.plantedPartition(N, 12, 5, 8, 42);
                Graph b = new ForkJoinPool(1).submit(() -> SyntheticGraphs.plantedPartition(N, 12, 5, 8, 42)).get();
                Graph c = SyntheticGraphs.plantedPartition(N, 12, 5, 8, 43)) {
            assertTrue(same(a, b), "same seed, 1 thread vs the common pool");
            assertFalse(a.col().equal(c.col()), "another seed gives another graph");
        }
    }

    @Test
    void degreeHomophilySplitAndFeaturesAsSpecified() {
        int classes = 4, f = 16;
        try (Graph g = SyntheticGraphs.plantedPartition(N, 16, classes, f, 7, new SyntheticGraphs.Options().homophily(0.9).signal(1.0));
                PointerScope s = new PointerScope()) {
            assertEquals(N, g.numNodes());
            assertEquals(classes, g.numClasses());
            assertEquals(f, g.numFeatures());
            double meanDegree = (double) g.numEdges() / N;
            assertEquals(16, meanDegree, 0.2, "mean degree");
            assertTrue(g.isSymmetric(), "undirected");
            long[] rp = g.adjacency().rowptrArray();
            int[] col = g.adjacency().colArray();
            long[] y = Tensors.toLongArray(g.labels());
            long same = 0;
            for (int i = 0; i < N; i++) {
                for (long e = rp[i]; e < rp[i + 1]; e++) {
                    assertTrue(col[(int) e] != i, "no self loops");
                    if (e > rp[i]) assertTrue(col[(int) e] > col[(int) e - 1], "rows sorted, no duplicates");
                    if (y[col[(int) e]] == y[i]) same++;
                }
            }
            assertEquals(0.9, (double) same / g.numEdges(), 0.01, "fraction of edges inside a class");
            assertEquals(0.1 * N, g.trainMask().sum().item_long(), 1);
            assertEquals(0.1 * N, g.valMask().sum().item_long(), 1);
            assertEquals(0.8 * N, g.testMask().sum().item_long(), 1);
            assertEquals(N, g.trainMask().logical_or(g.valMask()).logical_or(g.testMask()).sum().item_long());
            // Class-correlated features: a node is closer to its own class mean than to others' (signal 1.0, noise 1.0, 16 dims).
            float[] x = Tensors.toFloatArray(g.features());
            double[][] mu = new double[classes][f];
            int[] cnt = new int[classes];
            for (int i = 0; i < N; i++) {
                cnt[(int) y[i]]++;
                for (int k = 0; k < f; k++) mu[(int) y[i]][k] += x[i * f + k];
            }
            int correct = 0;
            for (int i = 0; i < N; i++) {
                int best = -1;
                double bd = Double.MAX_VALUE;
                for (int c = 0; c < classes; c++) {
                    double d = 0;
                    for (int k = 0; k < f; k++) {
                        double t = x[i * f + k] - mu[c][k] / cnt[c];
                        d += t * t;
                    }
                    if (d < bd) { bd = d; best = c; }
                }
                if (best == y[i]) correct++;
            }
            assertTrue(correct > 0.8 * N, "nearest class mean accuracy " + (double) correct / N);
        }
    }

    @Test
    void smallAndDegenerateSizes() {
        try (Graph one = SyntheticGraphs.plantedPartition(1, 0, 1, 3, 1); Graph single = SyntheticGraphs.plantedPartition(50, 4, 1, 0, 1)) {
            assertEquals(0, one.numEdges());
            assertEquals(0, single.numFeatures());
            assertTrue(single.isSymmetric());
        }
    }
}
