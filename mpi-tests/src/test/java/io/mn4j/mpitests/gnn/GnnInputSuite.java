package io.mn4j.mpitests.gnn;

import io.mn4j.communicator.Communicator;
import io.mn4j.gnn.graph.Csr;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.graph.SyntheticGraphs;
import io.mn4j.gnn.io.Npy;
import io.mn4j.gnn.partition.PartitionData;
import io.mn4j.gnn.partition.PartitionReader;
import io.mn4j.gnn.partition.PartitionWriter;
import io.mn4j.gnn.partition.Partitioners;
import io.mn4j.gnn.shard.GraphShardManager;
import io.mn4j.mpitests.Check;
import io.mn4j.mpitests.Scenario;
import io.mn4j.mpitests.ScenarioSuite;
import io.mn4j.tensor.Tensors;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * Bad input on one rank or all: every rank fails with a message naming what was wrong, and no
 * rank is left waiting in a collective (the launch would time out).
 *
 * <ul>
 *   <li>a weighted graph is rejected by {@link GraphShardManager#build} on every rank (its layers
 *       would silently aggregate without the weights);
 *   <li>{@link PartitionReader#load(Communicator, Path)} with a missing file, a truncated file or
 *       labels outside {@code [0, numClasses)} in the last rank's partition: every rank throws,
 *       naming that file; then a good directory (with unlabelled nodes) loads on every rank.
 * </ul>
 */
public class GnnInputSuite implements ScenarioSuite {
    private static final int NODES = 90, CLASSES = 3;

    @Override
    public Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = new LinkedHashMap<>();
        s.put("a weighted graph is rejected on every rank", GnnInputSuite::weighted);
        s.put("a missing file on the last rank fails every rank, naming it", (c, check) -> failsEverywhere(c, check,
                (dir, last) -> Files.delete(dir.resolve(last).resolve("col.npy")), "col.npy", "missing file"));
        s.put("a truncated file on the last rank fails every rank, naming it", (c, check) -> failsEverywhere(c, check,
                (dir, last) -> truncate(dir.resolve(last).resolve("features.npy")), "features.npy", "truncated"));
        s.put("labels outside [0, numClasses) on the last rank fail every rank, naming the file", (c, check) -> failsEverywhere(c, check,
                (dir, last) -> setFirstLabel(dir.resolve(last).resolve("labels.npy"), CLASSES), "labels.npy", "" + CLASSES));
        s.put("negative labels other than the unlabelled mark fail every rank, naming the file", (c, check) -> failsEverywhere(c, check,
                (dir, last) -> setFirstLabel(dir.resolve(last).resolve("labels.npy"), -1), "labels.npy", "-1"));
        s.put("unlabelled nodes (label " + Graph.UNLABELLED + ") load on every rank", GnnInputSuite::unlabelledLoads);
        s.put("ranks that read different partitionings fail every rank, naming what each read", GnnInputSuite::differentPartitionings);
        s.put("shard manager input wrong on the last rank fails every rank", GnnInputSuite::wrongShardInput);
        return s;
    }

    /**
     * Rank 0 reads one partitioning of the graph, the other ranks another (node-local copies out of
     * step): each part is consistent with its own metadata, so only comparing the ranks' metadata
     * finds it. Each partitioning read by every rank loads (with one rank, that is all).
     */
    private static void differentPartitionings(Communicator c, Check check) throws IOException {
        Path range = partitions(c, false, (d, last) -> { });
        Path random = partitions(c, false, "random", (d, last) -> { });
        try {
            for (Path dir : new Path[] {range, random}) {
                try (PartitionData part = PartitionReader.load(c, dir)) {
                    check.equal("every rank reads " + part.metadata().method() + " partitioning", part.metadata().numParts(), c.size());
                }
            }
            if (c.size() < 2) {
                return;
            }
            check.throwsWith("load on rank " + c.rank(), () -> PartitionReader.load(c, c.rank() == 0 ? range : random).close(),
                    "every rank must have the same metadata", "rank 0 has PartitionMetadata[", "method=range",
                    c.size() == 2 ? "rank 1 has" : "ranks 1, 2", "method=random");
            check.equal("ranks in step afterwards", c.size(), c.allreduceObj(1, Integer::sum));
        } finally {
            remove(c, range);
            remove(c, random);
        }
    }

    /**
     * GraphShardManager.build with input that only the last rank sees is wrong (an in-edge matrix
     * of the wrong number of rows; offsets that differ from the others'): every rank throws, the
     * last one saying what was wrong, and the ranks stay in step.
     */
    private static void wrongShardInput(Communicator c, Check check) throws IOException {
        Path dir = partitions(c, false, (d, last) -> { });
        boolean last = c.rank() == c.size() - 1;
        try (PartitionData part = PartitionReader.load(c, dir); PointerScope s = new PointerScope()) {
            long[] offsets = part.metadata().partNodeOffsets();
            Csr rows = part.adjacency();
            Csr fewer = last ? rows.rows(0, rows.numRows() - 1) : rows;
            check.throwsWith("an in-edge matrix a row short on the last rank", () -> GraphShardManager.build(c, offsets, fewer).close(),
                    "building the graph shard manager", last ? "rows" : "rank " + (c.size() - 1));
            if (c.size() > 1) {
                // The same part sizes for the last rank, but every partition boundary one further.
                long[] shifted = offsets.clone();
                if (last) {
                    for (int p = 1; p < shifted.length; p++) {
                        shifted[p]++;
                    }
                }
                check.throwsWith("offsets that differ on the last rank", () -> GraphShardManager.build(c, shifted, rows).close(),
                        "every rank must have the same partition offsets", Arrays.toString(offsets));
            }
            check.equal("ranks in step afterwards", c.size(), c.allreduceObj(1, Integer::sum));
        } finally {
            remove(c, dir);
        }
    }

    private static void weighted(Communicator c, Check check) throws IOException {
        Path dir = partitions(c, true, (d, last) -> { });
        try (PartitionData part = PartitionReader.load(dir, c.rank(), c.size())) {
            check.isTrue("the partition holds weights", part.edgeWeight() != null, "no edge_weight.npy was loaded");
            check.throwsWith("build from the partition", () -> GraphShardManager.build(c, part).close(), "weighted", "edge_weight");
            long[] offsets = part.metadata().partNodeOffsets();
            check.throwsWith("build from a weighted in-edge matrix", () -> GraphShardManager.build(c, offsets, part.adjacency()).close(),
                    "weighted");
        } finally {
            remove(c, dir);
        }
    }

    /** Damages the last rank's partition, then loads collectively: every rank must throw, naming the file. */
    private static void failsEverywhere(Communicator c, Check check, Damage damage, String file, String what) throws IOException {
        Path dir = partitions(c, false, damage);
        String named = dir.resolve(PartitionWriter.partDir(c.size() - 1)).resolve(file).toString();
        try {
            check.throwsWith("load on rank " + c.rank(), () -> PartitionReader.load(c, dir).close(), named, what);
            // The job goes on: the ranks are in step after the failure.
            check.equal("ranks in step afterwards", c.size(), c.allreduceObj(1, Integer::sum));
        } finally {
            remove(c, dir);
        }
    }

    private static void unlabelledLoads(Communicator c, Check check) throws IOException {
        Path dir = partitions(c, false, (d, last) -> setFirstLabel(d.resolve(last).resolve("labels.npy"), Graph.UNLABELLED));
        try (PartitionData part = PartitionReader.load(c, dir)) {
            if (c.rank() == c.size() - 1) {
                check.equal("the last partition's first label", (long) Graph.UNLABELLED, Tensors.toLongArray(part.labels())[0]);
            } else {
                check.equal("labels loaded", part.numLocalNodes(), part.labels().size(0));
            }
        } finally {
            remove(c, dir);
        }
    }

    interface Damage {
        void apply(Path dir, String lastPart) throws IOException;
    }

    /** Rank 0 writes a partition per rank (and damages it); every rank gets the directory. */
    private static Path partitions(Communicator c, boolean weighted, Damage damage) throws IOException {
        return partitions(c, weighted, "range", damage);
    }

    private static Path partitions(Communicator c, boolean weighted, String partitioner, Damage damage) throws IOException {
        String where = null;
        if (c.rank() == 0) {
            Path dir = Files.createTempDirectory("mn4j-gnn-input-");
            try (Graph plain = SyntheticGraphs.plantedPartition(NODES, 6, CLASSES, 4, 2);
                    PointerScope s = new PointerScope();
                    Graph g = weighted ? plain.withEdgeWeight(torch.rand(plain.numEdges())) : plain.withEdgeWeight(null)) {
                PartitionWriter.partitionAndWrite(dir, g, Partitioners.byName(partitioner), c.size(), 1);
            }
            damage.apply(dir, PartitionWriter.partDir(c.size() - 1));
            where = dir.toString();
        }
        return Path.of(c.bcastObj(where, 0));
    }

    private static void remove(Communicator c, Path dir) throws IOException {
        c.barrier();
        if (c.rank() == 0) {
            try (Stream<Path> s = Files.walk(dir)) {
                for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        }
    }

    private static void truncate(Path f) throws IOException {
        byte[] b = Files.readAllBytes(f);
        Files.write(f, Arrays.copyOf(b, b.length - 7));
    }

    private static void setFirstLabel(Path f, long label) throws IOException {
        try (PointerScope s = new PointerScope()) {
            Tensor y = Npy.read(f);
            y.narrow(0, 0, 1).fill_(new Scalar(label));
            Npy.write(f, y);
        }
    }
}
