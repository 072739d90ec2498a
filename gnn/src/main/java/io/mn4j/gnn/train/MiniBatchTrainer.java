package io.mn4j.gnn.train;

import io.mn4j.iterators.EpochStats;
import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.ReduceOp;
import io.mn4j.gnn.shard.GraphShardManager;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.nn.GnnModel;
import io.mn4j.gnn.sampling.DistNeighborSampler;
import io.mn4j.gnn.sampling.DistNodeData;
import io.mn4j.gnn.sampling.Sample;
import io.mn4j.communicator.Agreement;
import io.mn4j.iterators.Permutations;
import io.mn4j.tensor.Tensors;
import java.util.Arrays;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptional;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/**
 * Trains a SAGE model on sampled mini-batches of a partitioned graph (PyG's distributed training):
 * each rank draws its batches from its own labelled training nodes, shuffled every epoch,
 * samples their neighbourhoods across the ranks ({@link DistNeighborSampler}), fetches the
 * sampled nodes' features from their owners ({@link DistNodeData}) and takes one optimiser step
 * per batch on the gradients summed over ranks. A batch's loss is the cross-entropy summed over
 * the seeds of all ranks divided by their number, so a step is that of the one-process mean loss
 * over the union of the ranks' batches. Ranks with fewer batches take part with empty ones until
 * the rank with the most is done. Evaluation is full-graph, on the shard manager, and exact.
 * Collective: every rank calls the same methods in the same order.
 *
 * <p>Without a shard manager (null) it only trains: {@link #trainEpoch} works, {@link #evaluate}
 * and so {@link #epoch} throw.
 */
public final class MiniBatchTrainer implements Trainer {
    private final Communicator comm;
    private final GraphShardManager graph;
    private final GnnModel model;
    private final Optimizer optimizer;
    private final LocalNodes nodes;
    private final Splits splits;
    private final DistNeighborSampler sampler;
    private final DistNodeData features;
    private final int batchSize;
    private final long seed;
    /** Global id of this rank's first node. */
    private final long firstNode;
    /** This rank's labelled training nodes, as global ids. */
    private final long[] train;
    private int epoch;

    /**
     * @param graph     the partitioned graph, for evaluation (null: none)
     * @param sampler   samples one hop per layer of {@code model}, on the same partitions as {@code graph}
     * @param batchSize seeds per rank and batch
     * @param seed      seed of the epochs' shuffles
     * @throws io.mn4j.communicator.JobInputException on every rank when a rank's batch size is below 1,
     *     or when the ranks pass different batch sizes or seeds, or a shard manager on some ranks only
     */
    public MiniBatchTrainer(Communicator comm, GraphShardManager graph, GnnModel model, Optimizer optimizer, LocalNodes nodes,
            DistNeighborSampler sampler, int batchSize, long seed) {
        Agreement.agree(comm, "setting up mini-batch training", () -> {
            if (batchSize < 1) {
                throw new IllegalArgumentException("the batch size must be at least 1, got " + batchSize);
            }
            return null;
        });
        // Every rank takes part in every batch: the number of batches must come out the same.
        Agreement.requireSame(comm, "batch size, shuffle seed and evaluation graph",
                "batch size " + batchSize + ", seed " + seed + (graph == null ? ", no graph" : ", a graph"));
        this.comm = comm;
        this.graph = graph;
        this.model = model;
        this.optimizer = optimizer;
        this.nodes = nodes;
        this.splits = new Splits(comm, nodes, model.outputs());
        this.sampler = sampler;
        this.features = new DistNodeData(comm, sampler.offsets(), nodes.features());
        this.batchSize = batchSize;
        this.seed = seed;
        this.firstNode = sampler.offsets()[comm.rank()];
        this.train = Arrays.stream(Tensors.toLongArray(splits.trainIdx)).map(i -> i + firstNode).toArray();
        comm.bcastData(model, 0);
    }

    /** Batches in one epoch: as many as the rank with the most training nodes has. */
    public int batchesPerEpoch() {
        return (int) ((Arrays.stream(splits.trainPerRank).max().orElse(0) + batchSize - 1) / batchSize);
    }

    /**
     * This rank's seeds of batch {@code b} (from 0) of epoch {@code epoch} (from 0): its training
     * nodes as global ids, shuffled by the seed and the epoch, in slices of the batch size (empty
     * once they have run out).
     */
    public long[] batch(int epoch, int b) {
        return slice(shuffled(train, seed, epoch), b);
    }

    private long[] slice(long[] order, int b) {
        return Arrays.copyOfRange(order, (int) Math.min(order.length, (long) b * batchSize),
                (int) Math.min(order.length, (long) (b + 1) * batchSize));
    }

    /** One pass over every rank's training nodes in batches, then an evaluation of every split. */
    @Override
    public EpochStats epoch() {
        requireGraph();
        long t0 = System.nanoTime();
        long bytes0 = bytesSent();
        double loss = trainEpoch();
        double[] acc = evaluate();
        double seconds = (System.nanoTime() - t0) / 1e9;
        return new EpochStats(epoch, loss, acc[0], acc[1], acc[3], Double.NaN, acc[2], seconds, Double.NaN, bytesSent() - bytes0);
    }

    /** Bytes this rank has sent, sampling and training (on {@code comm}) and evaluating (on the graph's own communicator). */
    private long bytesSent() {
        return comm.stats().totalBytesSent() + (graph == null ? 0 : graph.communicator().stats().totalBytesSent());
    }

    /**
     * One pass over every rank's training nodes in batches, without evaluation; returns the mean
     * cross-entropy over all ranks' training nodes, each taken before the step of its batch.
     */
    @Override
    public double trainEpoch() {
        model.train(true);
        int batches = batchesPerEpoch();
        long[] order = shuffled(train, seed, epoch);
        double lossSum = 0;
        for (int b = 0; b < batches; b++) {
            long[] seeds = slice(order, b);
            try (PointerScope scope = new PointerScope();
                    Sample sample = sampler.sample(seeds, (long) epoch * batches + b)) {
                Tensor x = features.gather(sample.inputNodes());
                Tensor out = model.forward(sample.blocks(), x, true);
                Tensor labels = nodes.labels().index_select(0, Tensors.longs(seeds).sub(new Scalar(firstNode)));
                Tensor ceSum = torch.nll_loss(torch.log_softmax(out, 1), labels, new TensorOptional(), 2, Graph.UNLABELLED);
                Tensor loss = ceSum.div(new Scalar((double) seedsInBatch(b)));
                optimizer.zero_grad();
                loss.backward();
                comm.sumGrad(model); // each rank's loss is its share of the batch's mean
                optimizer.step();
                lossSum += ceSum.item_double();
            }
        }
        epoch++;
        try (PointerScope scope = new PointerScope()) {
            return comm.allreduce(torch.scalar_tensor(new Scalar(lossSum), new TensorOptions(torch.ScalarType.Double)), ReduceOp.SUM)
                    .item_double() / splits.globalTrain;
        }
    }

    /** Seeds of all ranks in batch {@code b}. */
    private long seedsInBatch(int b) {
        long n = 0;
        for (long t : splits.trainPerRank) {
            n += Math.max(0, Math.min(batchSize, t - (long) b * batchSize));
        }
        return n;
    }

    private static long[] shuffled(long[] nodes, long seed, int epoch) {
        int[] p = Permutations.of(nodes.length, seed * 0x9E3779B97F4A7C15L + epoch);
        long[] a = new long[nodes.length];
        for (int i = 0; i < a.length; i++) {
            a[i] = nodes[p[i]];
        }
        return a;
    }

    /** @throws IllegalStateException without a shard manager to evaluate on (on every rank: they agreed on it) */
    @Override
    public int epochsDone() {
        return epoch;
    }

    @Override
    public void resumeAfter(int epochs) {
        epoch = Trainer.epochsDone(epochs);
    }

    @Override
    public double[] evaluate() {
        requireGraph();
        return splits.accuracy(model, graph);
    }

    private void requireGraph() {
        if (graph == null) {
            throw new IllegalStateException("this MiniBatchTrainer has no shard manager to evaluate on: use trainEpoch()");
        }
    }
}
