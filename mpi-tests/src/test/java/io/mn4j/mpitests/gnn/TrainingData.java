package io.mn4j.mpitests.gnn;

import io.mn4j.examples.gnn.GraphOptions;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.graph.SyntheticGraphs;
import io.mn4j.gnn.partition.MetisPartitioner;
import io.mn4j.gnn.partition.NodeOrder;
import io.mn4j.gnn.partition.PartitionWriter;
import io.mn4j.gnn.partition.Partitioner;
import io.mn4j.gnn.partition.Partitioners;
import io.mn4j.tensor.Tensors;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.bytedeco.javacpp.PointerScope;

/**
 * The partition directories the training suites use, written once per test run by the JUnit side
 * (one process, before any launch) and read by the ranks.
 *
 * <p>Where: a directory under the temporary directory named after a hash of the location of these
 * test classes. The ranks of a launch load them from the same place (they run on the test JVM's
 * class path, see {@code MpiLauncher}), so both sides find the directory without passing
 * arguments through the launcher, and test runs of different checkouts do not share it.
 *
 * <ul>
 *   <li>{@code cora-K}: Planetoid Cora (row-normalised features, public split), METIS, K parts;
 *   <li>{@code cora-K-none}, {@code cora-K-rcm}: the same cut with each partition's nodes in
 *       increasing original id and in reverse Cuthill–McKee order;
 *   <li>{@code notrain-K}: a 1200-node planted-partition graph cut into K contiguous ranges whose
 *       training nodes all lie in the first quarter, so for K ≥ 2 every rank but 0 owns none;
 *   <li>{@code isolated-K}: a 1200-node graph whose edges never leave their class (homophily 1),
 *       node v in partition label(v) mod K: no partition has an edge to another;
 *   <li>the 1-part directories double as the one-process reference.
 * </ul>
 */
final class TrainingData {
    static final int SMALL_NODES = 1200;

    private TrainingData() {
    }

    /** The shared directory of this class path's test runs. */
    static Path dir() {
        String where = String.valueOf(TrainingData.class.getProtectionDomain().getCodeSource().getLocation());
        return Path.of(System.getProperty("java.io.tmpdir"), "mn4j-gnn-training-" + Integer.toHexString(where.hashCode()));
    }

    static Path cora(int parts) {
        return dir().resolve("cora-" + parts);
    }

    static Path cora(int parts, NodeOrder order) {
        return dir().resolve("cora-" + parts + "-" + order.label());
    }

    static Path noTrain(int parts) {
        return dir().resolve("notrain-" + parts);
    }

    static Path isolated(int parts) {
        return dir().resolve("isolated-" + parts);
    }

    /** A file rank 0 of a launch writes results to (losses, accuracies). */
    static Path result(String name) {
        return dir().resolve("results").resolve(name);
    }

    /** Writes every directory afresh for the given partition counts (and 1). Call from the JUnit side. */
    static synchronized void prepare(int... partCounts) throws IOException {
        Path d = dir();
        if (Files.exists(d)) {
            try (Stream<Path> s = Files.walk(d)) {
                for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        }
        Files.createDirectories(d.resolve("results"));
        GraphOptions cora = new GraphOptions();
        cora.data = "cora";
        String method = MetisPartitioner.isAvailable() ? "metis" : "ldg";
        try (Graph g = cora.load(); Graph nt = noTrainGraph(); Graph iso = isolatedGraph()) {
            int[] isoLabels = Tensors.toIntArray(iso.labels());
            for (int k : withOne(partCounts)) {
                Partitioner p = Partitioners.byName(method);
                int[] cut = p.partition(g, k, 1);
                PartitionWriter.write(cora(k), g, cut, k, p.name(), 1);
                for (NodeOrder order : NodeOrder.values()) {
                    PartitionWriter.write(cora(k, order), g, cut, k, p.name(), 1, order);
                }
                PartitionWriter.partitionAndWrite(noTrain(k), nt, Partitioners.byName("range"), k, 1);
                int[] byClass = new int[isoLabels.length];
                for (int v = 0; v < byClass.length; v++) {
                    byClass[v] = isoLabels[v] % k;
                }
                PartitionWriter.write(isolated(k), iso, byClass, k, "class-mod-k", 0);
            }
        }
        Files.writeString(d.resolve("README"), "partitions for io.mn4j.mpitests.gnn training suites\n", StandardCharsets.UTF_8);
    }

    private static int[] withOne(int[] counts) {
        return IntStream.concat(IntStream.of(1), IntStream.of(counts)).distinct().toArray();
    }

    /** Training nodes only among the first quarter of the ids (range partitions of 2, 3 and 4 parts: all on part 0). */
    private static Graph noTrainGraph() {
        try (Graph g = SyntheticGraphs.plantedPartition(SMALL_NODES, 8, 4, 16, 3);
                PointerScope s = new PointerScope()) {
            boolean[] train = new boolean[SMALL_NODES];
            boolean[] val = new boolean[SMALL_NODES];
            boolean[] test = new boolean[SMALL_NODES];
            SplittableRandom r = new SplittableRandom(5);
            for (int v = 0; v < SMALL_NODES; v++) {
                if (v < SMALL_NODES / 4 && r.nextDouble() < 0.4) {
                    train[v] = true;
                } else if (r.nextDouble() < 0.3) {
                    val[v] = true;
                } else {
                    test[v] = true;
                }
            }
            return g.withMasks(Tensors.bools(train), Tensors.bools(val), Tensors.bools(test));
        }
    }

    private static Graph isolatedGraph() {
        return SyntheticGraphs.plantedPartition(SMALL_NODES, 8, 4, 16, 4,
                new SyntheticGraphs.Options().homophily(1.0).split(0.3, 0.2));
    }
}
