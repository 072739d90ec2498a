package io.mn4j.mpitests.cluster;

import static io.mn4j.mpitests.cluster.ClusterRuns.assertCompleted;
import static io.mn4j.mpitests.cluster.ClusterRuns.epochs;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.examples.Train;
import io.mn4j.mpitests.MpiLauncher;
import io.mn4j.mpitests.SimulatedCluster;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The main job, {@code Train} (the MLP's layers split over the ranks), across hosts: the same losses as on one host. */
class ClusterTrainTest {
    /** A reduced problem: 1000 training and 300 test examples, a narrow MLP, 2 epochs of 20 steps. */
    private static final List<String> SMALL = List.of("--epochs", "2", "--train-examples", "1000", "--test-examples", "300",
            "--batch-size", "50", "--eval-batch-size", "100", "--hidden", "64,48,32", "--lr", "3e-3", "--schedule", "constant",
            "--seed", "3", "--no-progress", "--no-plot");

    @RegisterExtension
    static final ClusterHosts CLUSTER = new ClusterHosts("m", 2);

    static Stream<Arguments> layouts() {
        return Stream.of(Arguments.of("2+2", ClusterHosts.EVEN), Arguments.of("2+1", ClusterHosts.UNEVEN));
    }

    @ParameterizedTest(name = "{0} ranks")
    @MethodSource("layouts")
    void sameLossesAsOneHost(String name, int[] slots) throws Exception {
        int ranks = ClusterHosts.ranks(slots);
        Path base = SimulatedCluster.sharedDir("train-");
        MpiLauncher.Result cluster = ClusterRuns.run(CLUSTER.get().slots(slots), ranks, Train.class, base.resolve("cluster"),
                args(base.resolve("cluster")));
        assertCompleted(cluster);
        assertTrue(cluster.output().contains("model parallel over " + ranks + " rank"), cluster::describe);
        MpiLauncher.Result one = ClusterRuns.run(MpiLauncher.LOCAL, ranks, Train.class, base.resolve("one"), args(base.resolve("one")));
        assertCompleted(one);
        // training loss, test loss, test accuracy
        ClusterRuns.assertSameColumns(epochs(base.resolve("one/epochs.csv")), epochs(base.resolve("cluster/epochs.csv")), 1e-6,
                "Train on " + name + " ranks", 1, 3, 4);
    }

    private static List<String> args(Path out) {
        List<String> a = new ArrayList<>(SMALL);
        a.addAll(List.of("--out", out.toString()));
        return a;
    }
}
