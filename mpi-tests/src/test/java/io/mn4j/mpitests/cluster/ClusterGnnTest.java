package io.mn4j.mpitests.cluster;

import static io.mn4j.mpitests.cluster.ClusterRuns.assertCompleted;
import static io.mn4j.mpitests.cluster.ClusterRuns.epochs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.examples.Partition;
import io.mn4j.examples.TrainGnn;
import io.mn4j.mpitests.MpiLauncher;
import io.mn4j.mpitests.SimulatedCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * GNN training across two hosts that each hold only their own ranks' partition files: in every
 * aggregation mode and with sampled mini-batches the losses equal those of the same job on one
 * host; without a partition directory, rank 0 partitions and sends each rank its own over MPI; a
 * host lacking its files ends the job on every rank, naming the host, the rank and the path.
 */
class ClusterGnnTest {
    /** The same arithmetic in the same order: only the transport differs. */
    private static final double TOLERANCE = 1e-6;
    /** Where each host keeps its copy (its own /tmp, which the other host does not see). */
    private static final String NODE_LOCAL = "/tmp/cora4";

    @RegisterExtension
    static final ClusterHosts CLUSTER = new ClusterHosts("g", 2);

    private static Path full;

    /** Cora in 4 parts by the Partition program; host 0 gets parts 0 and 1, host 1 parts 2 and 3. */
    @BeforeAll
    static void partition() throws Exception {
        full = SimulatedCluster.sharedDir("cora4-").resolve("parts");
        ClusterRuns.inProcess(new Partition(), "--data", "cora", "--parts", "4", "--out", full.toString());
        SimulatedCluster c = CLUSTER.get();
        ClusterRuns.copyPartitions(full, c.hostTmp(0).resolve("cora4"), 0, 1);
        ClusterRuns.copyPartitions(full, c.hostTmp(1).resolve("cora4"), 2, 3);
    }

    private static List<String> training(String out, String... extra) {
        List<String> args = new ArrayList<>(List.of("--no-progress", "--no-plot", "--epochs", "4", "--out", out));
        args.addAll(Arrays.asList(extra));
        return args;
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "SAR GCN | --model gcn --mode sar",
        "one-shot GAT | --model gat --hidden 16 --heads 2 --mode oneshot",
        "pipelined GCN | --model gcn --mode pipelined --smoothing 0.9",
        "sampled SAGE | --model sage --fanouts 5,5 --batch-size 32 --mode sar"})
    void sameLossesAsOneHost(String name, String options) throws Exception {
        Path base = SimulatedCluster.sharedDir("gnn-");
        String[] extra = options.trim().split(" ");
        MpiLauncher.Result cluster = ClusterRuns.run(CLUSTER.get().slots(ClusterHosts.EVEN), 4, TrainGnn.class, base.resolve("cluster"),
                training(base.resolve("cluster").toString(), concat(extra, "--partitions", NODE_LOCAL)));
        assertCompleted(cluster);
        MpiLauncher.Result one = ClusterRuns.run(MpiLauncher.LOCAL, 4, TrainGnn.class, base.resolve("one"),
                training(base.resolve("one").toString(), concat(extra, "--partitions", full.toString())));
        assertCompleted(one);
        // loss, train/val/test accuracy
        ClusterRuns.assertSameColumns(epochs(base.resolve("one/epochs.csv")), epochs(base.resolve("cluster/epochs.csv")), TOLERANCE, name,
                1, 2, 3, 4);
    }

    @Test
    void partitionsTravelOverMpiAndStayOnTheirHosts() throws Exception {
        SimulatedCluster c = CLUSTER.get();
        Path base = SimulatedCluster.sharedDir("gnn-scatter-");
        // --out on each host's own /tmp: rank 0 writes its files on host 0, nobody reads them elsewhere.
        MpiLauncher.Result cluster = ClusterRuns.run(c.slots(ClusterHosts.UNEVEN), 3, TrainGnn.class, base.resolve("cluster"),
                training("/tmp/scatter", "--data", "cora"));
        assertCompleted(cluster);
        assertTrue(cluster.output().contains("each rank gets its partition over MPI"), cluster::describe);
        Path host0 = c.hostTmp(0).resolve("scatter");
        Path host1 = c.hostTmp(1).resolve("scatter");
        assertEquals(List.of("metadata.json", "part-0", "part-1"), ClusterRuns.list(host0.resolve("partitions")), "host 0 keeps its ranks' parts");
        assertEquals(List.of("metadata.json", "part-2"), ClusterRuns.list(host1.resolve("partitions")), "host 1 keeps its rank's part");
        assertFalse(Files.exists(host1.resolve("epochs.csv")), "rank 0's files are on host 0 only");

        MpiLauncher.Result one = ClusterRuns.run(MpiLauncher.LOCAL, 3, TrainGnn.class, base.resolve("one"),
                training(base.resolve("one").toString(), "--data", "cora"));
        assertCompleted(one);
        ClusterRuns.assertSameColumns(epochs(base.resolve("one/epochs.csv")), epochs(host0.resolve("epochs.csv")), TOLERANCE,
                "partitioned on rank 0 and sent", 1, 2, 3, 4);
    }

    @Test
    void aHostWithoutItsFilesEndsTheJobOnEveryRank() throws Exception {
        SimulatedCluster c = CLUSTER.get();
        ClusterRuns.copyPartitions(full, c.hostTmp(1).resolve("without3"), 2);
        ClusterRuns.copyPartitions(full, c.hostTmp(0).resolve("without3"), 0, 1);
        Path base = SimulatedCluster.sharedDir("gnn-missing-");
        MpiLauncher.Result r = ClusterRuns.run(c.slots(ClusterHosts.EVEN), 4, TrainGnn.class, base,
                training(base.toString(), "--partitions", "/tmp/without3"));
        assertFalse(r.timedOut(), () -> "hung:\n" + r.describe());
        assertNotEquals(0, r.exitCode(), r::describe);
        String missing = "/tmp/without3/part-3";
        for (int rank = 0; rank < 4; rank++) {
            String prefix = "TrainGnn: rank " + rank + ": ";
            List<String> lines = r.output().lines().filter(l -> l.startsWith(prefix)).toList();
            assertEquals(1, lines.size(), () -> "one message from every rank:\n" + r.describe());
            String line = lines.get(0);
            for (String named : List.of("loading partition 3", "on host " + c.hostName(1), missing)) {
                assertTrue(line.contains(named), () -> "rank's message lacks '" + named + "': " + line);
            }
            assertTrue(rank == 3 || line.contains("rank 3: "), () -> "names the rank that failed: " + line);
        }
        assertFalse(r.output().contains("Exception in thread"), () -> "a clean message, not a stack trace:\n" + r.describe());
    }

    private static String[] concat(String[] a, String... b) {
        String[] all = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        return all;
    }
}
