package io.mn4j.mpitests.gnn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.mpitests.MpiSuiteTests;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Training runs under mpirun: {@link GnnTrainingSuite} with one rank, {@link GnnGatTrainingSuite}
 * (the same plus GAT) with 2, 3 and 4, then the GCN losses without dropout compared across the three
 * launches. The partition directories are written once, before the launches.
 */
class GnnTrainingTest {
    @TestFactory
    Stream<DynamicNode> training() throws IOException {
        TrainingData.prepare(2, 3, 4);
        List<DynamicNode> nodes = new ArrayList<>();
        nodes.addAll(MpiSuiteTests.forRanks(GnnTrainingSuite.class, 900, GnnTrainingSuite.MALLOC_ENV, 1).toList());
        nodes.addAll(MpiSuiteTests.forRanks(GnnGatTrainingSuite.class, 1200, GnnTrainingSuite.MALLOC_ENV, 2, 3, 4).toList());
        nodes.add(DynamicTest.dynamicTest("GCN losses without dropout equal with 1, 2, 3 and 4 ranks", GnnTrainingTest::sameLossesAcrossRankCounts));
        Path summary = TrainingData.result("summary.txt");
        if (Files.exists(summary)) {
            System.out.println(Files.readString(summary, StandardCharsets.UTF_8));
        }
        return nodes.stream();
    }

    private static void sameLossesAcrossRankCounts() throws IOException {
        double[] one = losses(1);
        assertEquals(GnnTrainingSuite.LOSS_EPOCHS, one.length, "epochs of the one-rank run");
        for (int np : new int[] {2, 3, 4}) {
            double[] other = losses(np);
            assertEquals(one.length, other.length, np + " ranks: epochs");
            for (int e = 0; e < one.length; e++) {
                assertEquals(one[e], other[e], 1e-4 * (1 + Math.abs(one[e])), np + " ranks, loss of epoch " + (e + 1)
                        + "\n 1 rank:  " + Arrays.toString(one) + "\n " + np + " ranks: " + Arrays.toString(other));
            }
        }
    }

    private static double[] losses(int np) throws IOException {
        Path f = TrainingData.result("gcn-losses-np" + np + ".txt");
        assertTrue(Files.exists(f), "the " + np + "-rank launch wrote no losses (see its failures above)");
        return Arrays.stream(Files.readString(f, StandardCharsets.UTF_8).trim().split(",")).mapToDouble(Double::parseDouble).toArray();
    }
}
