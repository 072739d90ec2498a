package io.mn4j.mpitests.gnn;

import io.mn4j.communicator.Communicator;
import io.mn4j.gnn.io.Npy;
import io.mn4j.gnn.nn.GnnModel;
import io.mn4j.gnn.partition.PartitionData;
import io.mn4j.gnn.partition.PartitionReader;
import io.mn4j.gnn.partition.PartitionWriter;
import io.mn4j.gnn.sampling.DistNeighborSampler;
import io.mn4j.gnn.shard.AggregationMode;
import io.mn4j.gnn.shard.GraphShardManager;
import io.mn4j.gnn.train.FullGraphTrainer;
import io.mn4j.gnn.train.LocalNodes;
import io.mn4j.gnn.train.MiniBatchTrainer;
import io.mn4j.iterators.EpochStats;
import io.mn4j.mpitests.Check;
import io.mn4j.mpitests.Scenario;
import io.mn4j.mpitests.ScenarioSuite;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Adam;
import org.bytedeco.pytorch.AdamOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * Training on partitions whose features are memory-mapped ({@code MN4J_MAPPED_RUN=mapped}) or
 * loaded ({@code loaded}), from the partition directory {@code MN4J_MAPPED_DIR}: sampled SAGE
 * mini-batches and full-graph GCN (SAR, no dropout: its input mask would copy the features). Each
 * scenario appends what it computed (losses, accuracies, parameter sums, as exact bit patterns) to
 * {@code results-<run>-rank<r>.txt} there, for {@link MappedFeaturesTest} to compare the two runs,
 * and checks that this rank's own allocations (JavaCPP's physicalBytes) stayed within its
 * maxPhysicalBytes. Mapped, it also checks that loading the same file would not fit the limit.
 */
public class MappedFeaturesSuite implements ScenarioSuite {
    static final String DIR = "MN4J_MAPPED_DIR", RUN = "MN4J_MAPPED_RUN";

    @Override
    public Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = new LinkedHashMap<>();
        s.put("sampled SAGE mini-batches, two epochs", MappedFeaturesSuite::sampled);
        s.put("full-graph GCN with SAR, three epochs", MappedFeaturesSuite::fullGraph);
        s.put("mapped only: the features loaded instead exceed maxPhysicalBytes", MappedFeaturesSuite::loadingExceedsTheLimit);
        return s;
    }

    private static Path dir() {
        return Path.of(System.getenv(DIR));
    }

    private static boolean mapped() {
        return "mapped".equals(System.getenv(RUN));
    }

    private static PartitionData load(Communicator c) {
        return PartitionReader.load(c, dir(), mapped());
    }

    private static void sampled(Communicator c, Check check) throws IOException {
        try (PartitionData part = load(c); PointerScope scope = new PointerScope()) {
            GnnModel model = model(GnnModel.Kind.SAGE, part, 0.5);
            Adam adam = new Adam(model.parameters(), new AdamOptions(0.01));
            DistNeighborSampler sampler = new DistNeighborSampler(c, part.metadata().partNodeOffsets(), part.adjacency(), new int[] {5, 5}, 7);
            MiniBatchTrainer trainer = new MiniBatchTrainer(c, null, model, adam, nodes(part), sampler, 64, 7);
            List<String> lines = new ArrayList<>();
            for (int e = 0; e < 2; e++) {
                try (PointerScope epoch = new PointerScope()) {
                    lines.add("sampled epoch " + e + " loss " + Double.toHexString(trainer.trainEpoch()));
                }
            }
            lines.add("sampled parameters " + parameterSums(model));
            record(c, check, lines);
        }
    }

    private static void fullGraph(Communicator c, Check check) throws IOException {
        try (PartitionData part = load(c); PointerScope scope = new PointerScope();
                GraphShardManager graph = GraphShardManager.build(c, part).mode(AggregationMode.SAR)) {
            GnnModel model = model(GnnModel.Kind.GCN, part, 0.0);
            Adam adam = new Adam(model.parameters(), new AdamOptions(0.01));
            FullGraphTrainer trainer = new FullGraphTrainer(c, graph, model, adam, nodes(part));
            List<String> lines = new ArrayList<>();
            for (int e = 0; e < 3; e++) {
                try (PointerScope epoch = new PointerScope()) {
                    EpochStats s = trainer.epoch();
                    lines.add("full-graph epoch " + e + " loss " + Double.toHexString(s.trainLoss()) + " accuracy "
                            + Double.toHexString(s.trainAccuracy()) + " " + Double.toHexString(s.validationAccuracy()));
                }
            }
            lines.add("full-graph parameters " + parameterSums(model));
            record(c, check, lines);
        }
    }

    /** The point of mapping: this rank's features file does not fit its limit as an allocation of its own. */
    private static void loadingExceedsTheLimit(Communicator c, Check check) throws IOException {
        if (!mapped()) {
            return;
        }
        Path file = dir().resolve(PartitionWriter.partDir(c.rank())).resolve("features.npy");
        long limit = Pointer.maxPhysicalBytes();
        check.isTrue("the features file is larger than maxPhysicalBytes", Files.size(file) > limit,
                Files.size(file) + " bytes, limit " + limit);
        // Reading fills memory allocated before it, so JavaCPP sees the excess only at the next allocation: look now.
        Tensor loaded = Npy.read(file);
        long own = Pointer.physicalBytes();
        loaded.close();
        check.isTrue("loaded, this rank's own memory exceeds maxPhysicalBytes", own > limit, own + " bytes, limit " + limit);
    }

    private static GnnModel model(GnnModel.Kind kind, PartitionData part, double dropout) {
        torch.manual_seed(5);
        GnnModel m = new GnnModel(kind, part.metadata().featureSize(), 16, part.metadata().numClasses(), 2, dropout, 1);
        torch.manual_seed(11 + part.part());
        return m;
    }

    private static LocalNodes nodes(PartitionData part) {
        return new LocalNodes(part.features(), part.labels(), part.trainMask(), part.valMask(), part.testMask());
    }

    private static String parameterSums(GnnModel model) {
        StringBuilder sb = new StringBuilder();
        TensorVector ps = model.parameters();
        for (long i = 0; i < ps.size(); i++) {
            sb.append(Double.toHexString(ps.get(i).to(torch.ScalarType.Double).sum().item_double())).append(' ');
        }
        return sb.toString().trim();
    }

    /** Appends the lines to this run's results file, and checks that the rank kept within its own limit. */
    private static void record(Communicator c, Check check, List<String> lines) throws IOException {
        long own = Pointer.physicalBytes(), limit = Pointer.maxPhysicalBytes();
        lines.add("rank " + c.rank() + " physicalBytes " + own + " maxPhysicalBytes " + limit + " (not compared)");
        Files.write(dir().resolve("results-" + System.getenv(RUN) + "-rank" + c.rank() + ".txt"), lines, StandardCharsets.UTF_8,
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        check.isTrue("own memory within maxPhysicalBytes", own <= limit, own + " > " + limit);
    }
}
