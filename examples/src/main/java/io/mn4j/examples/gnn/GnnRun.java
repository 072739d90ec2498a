package io.mn4j.examples.gnn;

import io.mn4j.communicator.Communicator;
import io.mn4j.gnn.nn.GnnModel;
import io.mn4j.gnn.partition.PartitionData;
import io.mn4j.gnn.partition.PartitionMetadata;
import io.mn4j.gnn.sampling.DistNeighborSampler;
import io.mn4j.gnn.shard.AggregationMode;
import io.mn4j.gnn.shard.GraphShardManager;
import io.mn4j.gnn.train.FullGraphTrainer;
import io.mn4j.gnn.train.LocalNodes;
import io.mn4j.gnn.train.MiniBatchTrainer;
import io.mn4j.gnn.train.Trainer;
import io.mn4j.iterators.EpochStats;
import java.math.BigDecimal;
import java.util.Arrays;
import java.util.Locale;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Adam;
import org.bytedeco.pytorch.AdamOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * One rank's side of GNN training on a loaded partition: the shard manager in the chosen
 * aggregation mode, the model, Adam with weight decay, and a {@link FullGraphTrainer} (or, with
 * {@link Sampling}, a {@link MiniBatchTrainer}, which evaluates on the shard manager).
 * {@code TrainGnn}, the epoch benchmark and the mpirun tests all train through this class, so they
 * measure and test the same code.
 *
 * <p>Every epoch runs inside its own {@link PointerScope}: the tensors the step creates (activations,
 * gradients, messages) are released when the epoch ends instead of whenever the garbage collector
 * runs, so resident memory stays flat from epoch to epoch. What must outlive an epoch (parameters,
 * optimizer state, the manager's cached edge weights and transposes) is created outside the scope
 * or taken out of it by the library.
 */
public final class GnnRun implements AutoCloseable {
    /**
     * What to train and how.
     *
     * @param batchNorm batch norm between the layers, over every node of every rank ({@link GnnModel#batchNorm})
     */
    public record Config(GnnModel.Kind kind, AggregationMode mode, int hidden, int layers, int heads, double dropout, double lr,
            double weightDecay, long seed, Sampling sampling, boolean batchNorm) {

        /** Without batch norm. */
        public Config(GnnModel.Kind kind, AggregationMode mode, int hidden, int layers, int heads, double dropout, double lr,
                double weightDecay, long seed, Sampling sampling) {
            this(kind, mode, hidden, layers, heads, dropout, lr, weightDecay, seed, sampling, false);
        }

        /** Full-graph training without batch norm. */
        public Config(GnnModel.Kind kind, AggregationMode mode, int hidden, int layers, int heads, double dropout, double lr,
                double weightDecay, long seed) {
            this(kind, mode, hidden, layers, heads, dropout, lr, weightDecay, seed, null);
        }

        /** Kipf and Welling's Cora set-up: 2-layer GCN, hidden 16, dropout 0.5, Adam lr 0.01, weight decay 5e-4. */
        public static Config gcnCora(AggregationMode mode, long seed) {
            return new Config(GnnModel.Kind.GCN, mode, 16, 2, 1, 0.5, 0.01, 5e-4, seed);
        }

        /**
         * Veličković et al.'s Cora GAT: 8 heads of 8 hidden units, ELU, dropout 0.6 of each layer's
         * input and of the attention coefficients, lr 0.005, weight decay 5e-4.
         */
        public static Config gatCora(AggregationMode mode, long seed) {
            return new Config(GnnModel.Kind.GAT, mode, 64, 2, 8, 0.6, 0.005, 5e-4, seed);
        }

        public Config withDropout(double d) {
            return new Config(kind, mode, hidden, layers, heads, d, lr, weightDecay, seed, sampling, batchNorm);
        }

        public Config withMode(AggregationMode m) {
            return new Config(kind, m, hidden, layers, heads, dropout, lr, weightDecay, seed, sampling, batchNorm);
        }

        public Config withSeed(long s) {
            return new Config(kind, mode, hidden, layers, heads, dropout, lr, weightDecay, s, sampling, batchNorm);
        }

        /** Sampled mini-batches (null: full-graph training). */
        public Config withSampling(Sampling s) {
            return new Config(kind, mode, hidden, layers, heads, dropout, lr, weightDecay, seed, s, batchNorm);
        }

        /** With or without batch norm between the layers. */
        public Config withBatchNorm(boolean b) {
            return new Config(kind, mode, hidden, layers, heads, dropout, lr, weightDecay, seed, sampling, b);
        }

        /**
         * Checks what depends on the configuration alone.
         *
         * @throws IllegalArgumentException saying what is wrong
         */
        public void validate() {
            atLeastOne("--layers", layers);
            atLeastOne("--hidden", hidden);
            atLeastOne("--heads", heads);
            if (!(dropout >= 0 && dropout < 1)) {
                throw new IllegalArgumentException("--dropout must be in [0, 1), got " + dropout);
            }
            if (kind == GnnModel.Kind.GAT && hidden % heads != 0) {
                throw new IllegalArgumentException("GAT: the hidden width " + hidden + " is not a multiple of " + heads + " heads");
            }
            if (sampling != null && kind != GnnModel.Kind.SAGE) {
                throw new IllegalArgumentException("sampled mini-batches train SAGE models, not " + kind);
            }
            if (sampling != null && sampling.fanouts.length != layers) {
                throw new IllegalArgumentException(sampling.fanouts.length + " fanouts for " + layers + " layers: give one per layer");
            }
        }

        private static void atLeastOne(String option, int value) {
            if (value < 1) {
                throw new IllegalArgumentException(option + " must be at least 1, got " + value);
            }
        }

        /** One line for logs and headers. */
        public String describe() {
            String width = kind == GnnModel.Kind.GAT ? heads + "x" + (hidden / Math.max(1, heads)) : String.valueOf(hidden);
            String how = sampling == null ? mode + " aggregation" : sampling.describe() + ", " + mode + " evaluation";
            return String.format(Locale.ROOT, "%d-layer %s (hidden %s, dropout %s%s), Adam lr %s weight decay %s, %s, seed %d",
                    layers, kind, width, plain(dropout), batchNorm ? ", batch norm" : "", plain(lr), plain(weightDecay), how, seed);
        }

        private static String plain(double v) {
            return BigDecimal.valueOf(v).stripTrailingZeros().toPlainString();
        }
    }

    /**
     * Mini-batch training on sampled neighbourhoods: {@code batchSize} seeds per rank and batch,
     * {@code fanouts[h]} neighbours per node at hop h from the seeds (-1: all), one hop per layer.
     */
    public record Sampling(int[] fanouts, int batchSize) {
        /** @throws IllegalArgumentException for no fanout, a fanout below 1 but -1, or a batch size below 1 */
        public Sampling {
            fanouts = fanouts.clone();
            if (fanouts.length == 0) {
                throw new IllegalArgumentException("give at least one fanout");
            }
            for (int f : fanouts) {
                if (f < 1 && f != -1) {
                    throw new IllegalArgumentException("each fanout must be at least 1, or -1 for all neighbours; got " + f);
                }
            }
            if (batchSize < 1) {
                throw new IllegalArgumentException("the batch size must be at least 1, got " + batchSize);
            }
        }

        @Override
        public int[] fanouts() {
            return fanouts.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Sampling s && s.batchSize == batchSize && Arrays.equals(s.fanouts, fanouts);
        }

        @Override
        public int hashCode() {
            return 31 * Arrays.hashCode(fanouts) + batchSize;
        }

        @Override
        public String toString() {
            return describe();
        }

        public String describe() {
            return "mini-batches of " + batchSize + " seeds per rank, fanouts " + Arrays.toString(fanouts);
        }
    }

    private final Communicator comm;
    private final Config config;
    private final PartitionData part;
    private final GraphShardManager graph;
    private final GnnModel model;
    private final Adam adam;
    private final Trainer trainer;
    private final Tensor features;

    private GnnRun(Communicator comm, PartitionData part, Config c) {
        PartitionMetadata m = part.metadata();
        this.comm = comm;
        this.config = c;
        this.part = part;
        // Dropout keyed by the original graph's node ids: the same masks however the graph was cut.
        this.graph = GraphShardManager.build(comm, part).mode(c.mode()).nodeIds(part.originalIds());
        // Parameters start from the seed whatever the number of ranks (the trainer also broadcasts rank 0's).
        torch.manual_seed(c.seed());
        this.model = new GnnModel(c.kind(), m.featureSize(), c.hidden(), m.numClasses(), c.layers(), c.dropout(), c.heads())
                .dropoutSeed(c.seed());
        if (c.batchNorm()) {
            model.batchNorm(comm);
        }
        AdamOptions o = new AdamOptions(c.lr());
        o.weight_decay().put(c.weightDecay());
        this.adam = new Adam(model.parameters(), o);
        Tensor x = part.features();
        this.features = x.is_floating_point() && x.scalar_type().value == torch.ScalarType.Float.value ? x : x.to(torch.ScalarType.Float);
        LocalNodes nodes = new LocalNodes(features, part.labels(), part.trainMask(), part.valMask(), part.testMask());
        if (c.sampling() == null) {
            this.trainer = new FullGraphTrainer(comm, graph, model, adam, nodes);
        } else {
            DistNeighborSampler sampler = new DistNeighborSampler(comm, m.partNodeOffsets(), part.adjacency(),
                    c.sampling().fanouts(), c.seed());
            this.trainer = new MiniBatchTrainer(comm, graph, model, adam, nodes, sampler, c.sampling().batchSize(), c.seed());
        }
    }

    /**
     * Sets up training on this rank's partition (k on rank k). Collective. Checks first what
     * {@link #check} checks; that depends only on the metadata, which every rank has read alike, so
     * every rank fails alike, before any communication.
     */
    public static GnnRun start(Communicator comm, PartitionData part, Config c) {
        check(part.metadata(), c);
        return new GnnRun(comm, part, c);
    }

    /**
     * Whether {@code c} can train on partitions with this metadata: features, labels and
     * train/val/test masks must be there, the graph unweighted, and the sizes positive.
     *
     * @throws IllegalArgumentException saying what is missing
     */
    public static void check(PartitionMetadata m, Config c) {
        if (m.featureSize() <= 0 || !m.hasLabels() || !m.hasMasks()) {
            throw new IllegalArgumentException("the partitions must have node features, labels and train/val/test masks to train on (they have "
                    + (m.featureSize() > 0 ? "" : "no ") + "features, " + (m.hasLabels() ? "" : "no ") + "labels, "
                    + (m.hasMasks() ? "" : "no ") + "masks)");
        }
        GraphShardManager.requireUnweighted(m);
        c.validate();
    }

    /** One training step and evaluation of every split; its temporaries are freed before it returns. Collective. */
    public EpochStats epoch() {
        try (PointerScope scope = new PointerScope()) {
            return trainer.epoch();
        }
    }

    /** Accuracy on the train, val and test nodes of all partitions. Collective. */
    public double[] evaluate() {
        try (PointerScope scope = new PointerScope()) {
            return trainer.evaluate();
        }
    }

    public Config config() {
        return config;
    }

    /** The configuration in words. */
    public String describe() {
        return config.describe();
    }

    public GraphShardManager graph() {
        return graph;
    }

    public GnnModel model() {
        return model;
    }

    /** The optimizer (Adam over the model's parameters; the same state on every rank). */
    public Adam optimizer() {
        return adam;
    }

    public Trainer trainer() {
        return trainer;
    }

    public PartitionData partition() {
        return part;
    }

    public Communicator communicator() {
        return comm;
    }

    /** Number of model parameters (the same on every rank). */
    public long parameterCount() {
        long n = 0;
        var ps = model.parameters();
        for (long i = 0; i < ps.size(); i++) {
            n += ps.get(i).numel();
        }
        return n;
    }

    /** Releases the manager and the optimizer (not the partition, which the caller loaded). */
    @Override
    public void close() {
        graph.close();
        adam.close();
        if (features != part.features()) {
            features.close();
        }
    }
}
