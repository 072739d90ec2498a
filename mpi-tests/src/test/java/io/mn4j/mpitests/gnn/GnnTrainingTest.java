package io.mn4j.mpitests.gnn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.gnn.shard.AggregationMode;
import io.mn4j.mpitests.MpiSuiteTests;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Training runs under mpirun: {@link GnnTrainingSuite} with one rank, {@link GnnGatTrainingSuite}
 * (the same plus GAT) with 2, 3 and 4, then, across the launches, the per-epoch losses of GCN and
 * GAT with dropout in every exact mode (to float32 rounding, 1e-5) and the 200 SAR epochs' test
 * accuracies of GCN on Cora (equal). The partition directories are written once, before the launches.
 */
class GnnTrainingTest {
    @TestFactory
    Stream<DynamicNode> training() throws IOException {
        TrainingData.prepare(2, 3, 4);
        List<DynamicNode> nodes = new ArrayList<>();
        nodes.addAll(MpiSuiteTests.forRanks(GnnTrainingSuite.class, 1800, GnnTrainingSuite.MALLOC_ENV, 1).toList());
        nodes.addAll(MpiSuiteTests.forRanks(GnnGatTrainingSuite.class, 1800, GnnTrainingSuite.MALLOC_ENV, 2, 3, 4).toList());
        for (String kind : new String[] {"gcn", "gat"}) {
            for (AggregationMode mode : Modes.exact()) {
                nodes.add(DynamicTest.dynamicTest(kind.toUpperCase(Locale.ROOT) + " " + mode
                        + " losses with dropout equal with 1, 2, 3 and 4 ranks", () -> sameLossesAcrossRankCounts(kind, mode)));
            }
        }
        nodes.add(DynamicTest.dynamicTest("GCN on Cora, 200 SAR epochs with dropout: the test accuracies equal with 1, 2, 3 and 4 ranks",
                GnnTrainingTest::sameTestAccuracies));
        Path summary = TrainingData.result("summary.txt");
        if (Files.exists(summary)) {
            System.out.println(Files.readString(summary, StandardCharsets.UTF_8));
        }
        return nodes.stream();
    }

    private static void sameLossesAcrossRankCounts(String kind, AggregationMode mode) throws IOException {
        double[] one = numbers(GnnTrainingSuite.lossFile(kind, mode, 1));
        assertEquals(GnnTrainingSuite.LOSS_EPOCHS, one.length, "epochs of the one-rank run");
        for (int np : new int[] {2, 3, 4}) {
            double[] other = numbers(GnnTrainingSuite.lossFile(kind, mode, np));
            assertEquals(one.length, other.length, np + " ranks: epochs");
            for (int e = 0; e < one.length; e++) {
                assertEquals(one[e], other[e], 1e-5 * (1 + Math.abs(one[e])), np + " ranks, loss of epoch " + (e + 1)
                        + "\n 1 rank:  " + Arrays.toString(one) + "\n " + np + " ranks: " + Arrays.toString(other));
            }
        }
    }

    private static void sameTestAccuracies() throws IOException {
        double[] one = numbers(TrainingData.result("gcn-cora-sar-test-np1.txt"));
        assertEquals(GnnTrainingSuite.CORA_EPOCHS, one.length, "epochs of the one-rank run");
        for (int np : new int[] {2, 3, 4}) {
            double[] other = numbers(TrainingData.result("gcn-cora-sar-test-np" + np + ".txt"));
            assertEquals(Arrays.toString(one), Arrays.toString(other), np + " ranks: test accuracy of every epoch");
        }
    }

    private static double[] numbers(Path f) throws IOException {
        assertTrue(Files.exists(f), f.getFileName() + " is missing: its launch wrote none (see its failures above)");
        return Arrays.stream(Files.readString(f, StandardCharsets.UTF_8).trim().split(",")).mapToDouble(Double::parseDouble).toArray();
    }
}
