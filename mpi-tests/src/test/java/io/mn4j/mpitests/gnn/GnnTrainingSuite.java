package io.mn4j.mpitests.gnn;

import io.mn4j.communicator.Communicator;
import io.mn4j.examples.gnn.GnnRun;
import io.mn4j.examples.support.Memory;
import io.mn4j.gnn.nn.GnnModel;
import io.mn4j.gnn.partition.NodeOrder;
import io.mn4j.gnn.partition.PartitionData;
import io.mn4j.gnn.partition.PartitionReader;
import io.mn4j.gnn.shard.AggregationMode;
import io.mn4j.iterators.EpochStats;
import io.mn4j.mpitests.Check;
import io.mn4j.mpitests.Scenario;
import io.mn4j.mpitests.ScenarioSuite;
import io.mn4j.mpitests.Trend;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.IntFunction;
import java.util.stream.Collectors;

/**
 * Full-graph training through {@link GnnRun} (what {@code TrainGnn} runs) on the partitions of
 * {@link TrainingData}, with as many partitions as ranks:
 *
 * <ul>
 *   <li>Kipf and Welling's 2-layer GCN on Cora (hidden 16, dropout 0.5, Adam lr 0.01, weight
 *       decay 5e-4, 200 epochs), in SAR mode and in PIPELINED mode without and with smoothing,
 *       reaches 80% test accuracy at the epoch of best validation accuracy, and
 *       every rank's resident memory stays flat from epoch 20 on (per-epoch pointer scopes): its
 *       least-squares slope over those epochs is below {@value #RSS_SLOPE_LIMIT} bytes per epoch;
 *   <li>the same GCN with dropout 0.5, and GAT as published ({@link GnnRun.Config#gatCora}), for 20
 *       epochs in each exact mode: rank 0 writes the per-epoch losses, which the JUnit side
 *       compares across launches with 1, 2, 3 and 4 ranks (the masks are keyed by the original
 *       node ids, so every partitioning draws the same); rank 0 also writes the 200 SAR epochs'
 *       test accuracies, compared likewise;
 *   <li>GCN and GAT on Cora in SAR mode with dropout 0.5, 10 epochs, on the same cut written with
 *       each partition's nodes in increasing original id and in reverse Cuthill–McKee order: the
 *       same losses (1e-5) and test accuracies;
 *   <li>PIPELINED with dropout 0.5, its own deterministic S = 1 run: two runs give the same losses;
 *   <li>for GCN and GAT with dropout 0.5 in every aggregation mode: a partitioning where all ranks
 *       but 0 own no training node, and one where no partition has an edge to another, train
 *       exactly as the same model on the whole graph in one process (losses to 1e-5, accuracies),
 *       and do not hang; PIPELINED mode, whose stale rows make it differ wherever edges cross
 *       partitions, trains exactly on the second and trains (without hanging) on the first.
 * </ul>
 */
public class GnnTrainingSuite implements ScenarioSuite {
    static final int CORA_EPOCHS = 200;
    static final int LOSS_EPOCHS = 20;
    /** The scenario whose GAT losses {@link GnnGatTrainingSuite} writes from its own GAT runs instead. */
    static final String GAT_LOSSES = "GAT on Cora as published: losses for the comparison across rank counts";
    static final int EDGE_CASE_EPOCHS = 5;
    /**
     * Resident memory may grow by at most this much per epoch from epoch {@link #RSS_FROM} on
     * (least-squares slope): a 2708x16 float32 activation is 173 KB. Measured without a leak
     * (1, 2, 4 ranks, {@link #MALLOC_ENV}): at most 22 KiB per epoch; with 76 KB leaked per epoch
     * on 1 rank, 100 KiB per epoch.
     */
    static final long RSS_SLOPE_LIMIT = 96L << 10;
    static final int RSS_FROM = 20;
    /**
     * The training launches' malloc: every block of 64 KiB or more (any tensor of a Cora
     * activation's size) is its own mapping, returned to the system when freed, so that resident
     * memory follows the live tensors. With glibc's default (a threshold that rises as large
     * blocks are freed), freed temporaries stay in the heap and are reused: leaked tensors are
     * hidden until that pool is used up, then resident memory jumps, and the slope without a
     * leak reached 86 KiB per epoch.
     */
    static final Map<String, String> MALLOC_ENV = Map.of("MALLOC_MMAP_THRESHOLD_", "65536",
            "GLIBC_TUNABLES", ""); // tunables of the caller's shell (mn4j-run's, say) would override it

    @Override
    public Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = new LinkedHashMap<>();
        s.put("GCN on Cora reaches 80% test accuracy", (c, check) -> coraAccuracy(c, check, GnnRun.Config.gcnCora(AggregationMode.SAR, 1), 0,
                0.80));
        s.put("GCN on Cora with PipeGCN's stale exchange (PIPELINED) reaches 80% test accuracy",
                (c, check) -> coraAccuracy(c, check, GnnRun.Config.gcnCora(AggregationMode.PIPELINED, 1), 0, 0.80));
        s.put("GCN on Cora, PIPELINED with smoothing 0.95 (PipeGCN-GF), reaches 80% test accuracy",
                (c, check) -> coraAccuracy(c, check, GnnRun.Config.gcnCora(AggregationMode.PIPELINED, 1), 0.95, 0.80));
        s.put("SAGE on Cora with sampled mini-batches (fanouts [10, 10], 32 seeds per rank) reaches 78% test accuracy",
                (c, check) -> coraAccuracy(c, check, SAGE_SAMPLED, 0, 0.78));
        s.put("SAGE with sampled mini-batches: ranks without training nodes take part without hanging, the loss falls", (c, check) -> {
            List<EpochStats> epochs = train(c, TrainingData.noTrain(c.size()), small(GnnModel.Kind.SAGE, AggregationMode.SAR)
                    .withDropout(0).withSampling(new GnnRun.Sampling(new int[] {4, 4}, 8)), EDGE_CASE_EPOCHS);
            check.isTrue("losses are finite and fall", epochs.stream().allMatch(e -> Double.isFinite(e.trainLoss()))
                    && last(epochs).trainLoss() < epochs.get(0).trainLoss(), "losses " + losses(epochs));
        });
        s.put("GCN on Cora, dropout 0.5: losses for the comparison across rank counts", GnnTrainingSuite::gcnCoraLosses);
        s.put(GAT_LOSSES, (c, check) -> {
            for (AggregationMode mode : Modes.exact()) {
                List<EpochStats> epochs = train(c, TrainingData.cora(c.size()), GnnRun.Config.gatCora(mode, 1), LOSS_EPOCHS);
                check.equal(mode + " epochs", LOSS_EPOCHS, epochs.size());
                check.isTrue(mode + " losses are finite", epochs.stream().allMatch(e -> Double.isFinite(e.trainLoss())), "losses " + losses(epochs));
                writeLosses(c, "gat", mode, epochs);
            }
        });
        s.put("GCN and GAT on Cora, SAR, dropout 0.5: partitions in reverse Cuthill-McKee node order train as in original-id order",
                GnnTrainingSuite::sameInBothNodeOrders);
        s.put("GCN on Cora PIPELINED, dropout 0.5: two runs give the same losses (deterministic with staleness 1)",
                GnnTrainingSuite::pipelinedTwice);
        for (GnnModel.Kind kind : new GnnModel.Kind[] {GnnModel.Kind.GCN, GnnModel.Kind.GAT}) {
            for (AggregationMode mode : Modes.exact()) {
                s.put(kind + " " + mode + ": ranks without training nodes train as one process",
                        (c, check) -> matchesOneProcess(c, check, TrainingData::noTrain, small(kind, mode)));
                s.put(kind + " " + mode + ": partitions without edges between them train as one process",
                        (c, check) -> matchesOneProcess(c, check, TrainingData::isolated, small(kind, mode)));
            }
            // Nothing crosses partitions, so nothing is stale: exact like the other modes.
            s.put(kind + " PIPELINED: partitions without edges between them train as one process",
                    (c, check) -> matchesOneProcess(c, check, TrainingData::isolated, small(kind, AggregationMode.PIPELINED)));
            s.put(kind + " PIPELINED: ranks without training nodes train without hanging, the loss falls", (c, check) -> {
                // Without dropout, whose noise could hide in 5 epochs whether the loss falls.
                List<EpochStats> epochs = train(c, TrainingData.noTrain(c.size()), small(kind, AggregationMode.PIPELINED).withDropout(0),
                        EDGE_CASE_EPOCHS);
                check.isTrue("losses are finite and fall", epochs.stream().allMatch(e -> Double.isFinite(e.trainLoss()))
                        && last(epochs).trainLoss() < epochs.get(0).trainLoss(), "losses " + losses(epochs));
            });
        }
        return s;
    }

    /** GraphSAGE on Cora as PyG's example trains it, on sampled mini-batches; evaluation full-graph. */
    static final GnnRun.Config SAGE_SAMPLED = new GnnRun.Config(GnnModel.Kind.SAGE, AggregationMode.SAR, 16, 2, 1, 0.5, 0.01, 5e-4, 1,
            new GnnRun.Sampling(new int[] {10, 10}, 32));

    static GnnRun.Config small(GnnModel.Kind kind, AggregationMode mode) {
        return new GnnRun.Config(kind, mode, 8, 2, 2, 0.5, 0.01, 5e-4, 3);
    }

    private static void coraAccuracy(Communicator c, Check check, GnnRun.Config config, double smoothing, double threshold)
            throws IOException {
        List<EpochStats> epochs = new ArrayList<>();
        long[] rss = new long[CORA_EPOCHS];
        try (PartitionData part = PartitionReader.load(c, TrainingData.cora(c.size()));
                GnnRun run = GnnRun.start(c, part, config)) {
            run.graph().smoothing(smoothing);
            for (int e = 0; e < CORA_EPOCHS; e++) {
                epochs.add(run.epoch());
                rss[e] = Memory.rssBytes();
            }
        }
        // Each epoch allocates tens of MiB of temporaries (dropout masks, activations, gradients):
        // without the per-epoch scope they would pile up until the garbage collector ran; a leak
        // of one tensor per epoch makes a slope of its size.
        long settled = rss[RSS_FROM - 1];
        long peak = Arrays.stream(rss, RSS_FROM - 1, CORA_EPOCHS).max().orElse(settled);
        double slope = Trend.slope(rss, RSS_FROM - 1);
        check.isTrue("the launch has " + MALLOC_ENV, MALLOC_ENV.entrySet().stream().allMatch(e -> e.getValue().equals(System.getenv(e.getKey()))),
                "the resident-memory check below is calibrated with " + MALLOC_ENV + " (see GnnTrainingTest)");
        check.isTrue("resident memory stays flat from epoch " + RSS_FROM, slope < RSS_SLOPE_LIMIT,
                String.format(Locale.ROOT, "RSS grows by %.1f KiB per epoch (limit %d): %.1f MiB after epoch %d, %.1f MiB after epoch %d, "
                        + "at most %.1f MiB", slope / 1024, RSS_SLOPE_LIMIT >> 10, settled / 1048576.0, RSS_FROM,
                        rss[CORA_EPOCHS - 1] / 1048576.0, CORA_EPOCHS, peak / 1048576.0));
        EpochStats best = bestValidation(epochs);
        String what = config.kind() + " Cora " + (config.sampling() != null ? "sampled " + Arrays.toString(config.sampling().fanouts())
                : config.mode()) + (smoothing > 0 ? " smoothing " + smoothing : "");
        if (config.mode() == AggregationMode.SAR && config.sampling() == null && smoothing == 0 && c.rank() == 0) {
            Files.writeString(TrainingData.result(config.kind().name().toLowerCase(Locale.ROOT) + "-cora-sar-test-np" + c.size() + ".txt"),
                    epochs.stream().map(e -> String.valueOf(e.testAccuracy())).collect(Collectors.joining(",")) + "\n", StandardCharsets.UTF_8);
        }
        report(c, String.format(Locale.ROOT, what + " (rank 0 RSS %.0f MiB after epoch %d, at most %.0f MiB after, %+.1f KiB per epoch)",
                settled / 1048576.0, RSS_FROM, peak / 1048576.0, slope / 1024), epochs);
        check.isTrue("test accuracy at the best validation epoch >= " + Math.round(100 * threshold) + "%", best.testAccuracy() >= threshold,
                "test accuracy " + best.testAccuracy() + " at epoch " + best.epoch() + " (val " + best.validationAccuracy() + ")");
        check.isTrue("training loss falls", last(epochs).trainLoss() < epochs.get(0).trainLoss() / 2,
                "loss " + epochs.get(0).trainLoss() + " -> " + last(epochs).trainLoss());
    }

    private static void gcnCoraLosses(Communicator c, Check check) throws IOException {
        for (AggregationMode mode : Modes.exact()) {
            List<EpochStats> epochs = train(c, TrainingData.cora(c.size()), GnnRun.Config.gcnCora(mode, 1), LOSS_EPOCHS);
            check.equal(mode + " epochs", LOSS_EPOCHS, epochs.size());
            check.isTrue(mode + " losses are finite and fall", epochs.stream().allMatch(e -> Double.isFinite(e.trainLoss()))
                    && last(epochs).trainLoss() < epochs.get(0).trainLoss(), "losses " + losses(epochs));
            writeLosses(c, "gcn", mode, epochs);
        }
    }

    /** Rank 0 writes the per-epoch losses of a run for the comparison across launches ({@link #lossFile}). */
    static void writeLosses(Communicator c, String kind, AggregationMode mode, List<EpochStats> epochs) throws IOException {
        if (c.rank() == 0) {
            Files.writeString(lossFile(kind, mode, c.size()), losses(epochs) + "\n", StandardCharsets.UTF_8);
        }
    }

    static Path lossFile(String kind, AggregationMode mode, int np) {
        return TrainingData.result(kind + "-" + mode + "-losses-np" + np + ".txt");
    }

    private static void pipelinedTwice(Communicator c, Check check) {
        GnnRun.Config config = GnnRun.Config.gcnCora(AggregationMode.PIPELINED, 1);
        List<EpochStats> a = train(c, TrainingData.cora(c.size()), config, EDGE_CASE_EPOCHS * 2);
        List<EpochStats> b = train(c, TrainingData.cora(c.size()), config, EDGE_CASE_EPOCHS * 2);
        check.equal("the losses of both runs", losses(a), losses(b));
    }

    /**
     * The same cut with each partition's nodes in increasing original id and in RCM order: node
     * data and masks move with the nodes, so every epoch agrees up to the rounding of sums taken in
     * another order.
     */
    private static void sameInBothNodeOrders(Communicator c, Check check) {
        for (GnnRun.Config config : List.of(GnnRun.Config.gcnCora(AggregationMode.SAR, 1), GnnRun.Config.gatCora(AggregationMode.SAR, 1))) {
            List<EpochStats> none = train(c, TrainingData.cora(c.size(), NodeOrder.NONE), config, EDGE_CASE_EPOCHS * 2);
            List<EpochStats> rcm = train(c, TrainingData.cora(c.size(), NodeOrder.RCM), config, EDGE_CASE_EPOCHS * 2);
            for (int e = 0; e < none.size(); e++) {
                check.close(config.kind() + " loss of epoch " + (e + 1), none.get(e).trainLoss(), rcm.get(e).trainLoss(), 1e-5);
                check.close(config.kind() + " test accuracy of epoch " + (e + 1), none.get(e).testAccuracy(), rcm.get(e).testAccuracy(), 0.005);
            }
        }
    }

    /**
     * Trains on the K-part directory and on the 1-part directory alone on each rank (the whole graph
     * in one process), from the same initial parameters: every epoch must agree.
     */
    private static void matchesOneProcess(Communicator c, Check check, IntFunction<Path> dirs, GnnRun.Config config) {
        List<EpochStats> dist = train(c, dirs.apply(c.size()), config, EDGE_CASE_EPOCHS);
        List<EpochStats> ref;
        try (Communicator alone = c.split(c.rank(), 0)) {
            ref = train(alone, dirs.apply(1), config, EDGE_CASE_EPOCHS);
        }
        check.equal("epochs", ref.size(), dist.size());
        for (int e = 0; e < Math.min(ref.size(), dist.size()); e++) {
            EpochStats a = ref.get(e);
            EpochStats b = dist.get(e);
            check.close("loss of epoch " + (e + 1), a.trainLoss(), b.trainLoss(), 1e-5);
            check.close("train accuracy of epoch " + (e + 1), a.trainAccuracy(), b.trainAccuracy(), 0.005);
            check.close("test accuracy of epoch " + (e + 1), a.testAccuracy(), b.testAccuracy(), 0.005);
        }
        check.isTrue("the loss falls", last(dist).trainLoss() < dist.get(0).trainLoss(), "losses " + losses(dist));
    }

    /** Loads this rank's partition of {@code dir}, trains {@code epochs} epochs, returns every epoch's numbers. */
    static List<EpochStats> train(Communicator c, Path dir, GnnRun.Config config, int epochs) {
        List<EpochStats> out = new ArrayList<>();
        try (PartitionData part = PartitionReader.load(c, dir); GnnRun run = GnnRun.start(c, part, config)) {
            for (int e = 0; e < epochs; e++) {
                out.add(run.epoch());
            }
        }
        return out;
    }

    /** The first epoch with the highest validation accuracy (the model TrainGnn reports). */
    static EpochStats bestValidation(List<EpochStats> epochs) {
        EpochStats best = epochs.get(0);
        for (EpochStats e : epochs) {
            if (e.validationAccuracy() > best.validationAccuracy()) {
                best = e;
            }
        }
        return best;
    }

    static EpochStats last(List<EpochStats> epochs) {
        return epochs.get(epochs.size() - 1);
    }

    static String losses(List<EpochStats> epochs) {
        return epochs.stream().map(e -> String.format(Locale.ROOT, "%.9g", e.trainLoss())).collect(Collectors.joining(","));
    }

    /** Rank 0 appends the run's accuracy and time to the results summary the JUnit side prints. */
    static void report(Communicator c, String what, List<EpochStats> epochs) throws IOException {
        if (c.rank() != 0) {
            return;
        }
        EpochStats best = bestValidation(epochs);
        double seconds = epochs.stream().mapToDouble(EpochStats::seconds).sum();
        String line = String.format(Locale.ROOT,
                "np=%d %s, %d epochs: test accuracy %.2f%% at the best validation epoch %d (val %.2f%%), final test %.2f%%, %.1f s training",
                c.size(), what, epochs.size(), 100 * best.testAccuracy(), best.epoch(), 100 * best.validationAccuracy(), 100 * last(epochs).testAccuracy(), seconds);
        Files.writeString(TrainingData.result("summary.txt"), line + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                StandardOpenOption.APPEND);
    }
}
