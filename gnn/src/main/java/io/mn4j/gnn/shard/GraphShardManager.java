package io.mn4j.gnn.shard;

import io.mn4j.communicator.Agreement;
import io.mn4j.communicator.Communicator;
import io.mn4j.functions.autograd.GradientBridge;
import io.mn4j.gnn.graph.Csr;
import io.mn4j.gnn.partition.PartitionData;
import io.mn4j.gnn.partition.PartitionMetadata;
import io.mn4j.tensor.Scopes;
import io.mn4j.tensor.Tensors;
import java.util.Arrays;
import java.util.function.Supplier;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one rank holds of a partitioned graph, and neighbourhood aggregation across ranks.
 *
 * <p>Partition p owns the contiguous node ids {@code [offsets[p], offsets[p+1])}; an edge belongs
 * to the partition of its destination. For rank i, shard j holds the in-edges of i's nodes whose
 * sources j owns. Self-loops stored in the graph are treated as PyG treats them: sums and means
 * (SAGE) count every stored edge; GCN's normalisation and attention operators with
 * {@link ShardOperator#selfLoops()} give every node exactly one self-loop.
 *
 * <p>Layers call {@link #aggregate(Tensor, EdgeNorm)} (plain weighted sums: GCN, mean-SAGE) or
 * {@link #aggregate(Tensor, Tensor, ShardOperator)} (anything else, e.g. attention); the
 * {@link AggregationMode} picks the aggregator that fetches remote shards and returns gradients.
 * Collective: every rank calls the same aggregations in the same order.
 *
 * <p>Memory: each aggregation runs in a {@code PointerScope} of its own (and each shard step in
 * another), so only the result and what backward reads outlive the call. In PIPELINED mode the
 * pipeline also holds the rows and gradients in flight until {@link #mode}, {@link #smoothing},
 * {@link #staleness} or {@link #close} ends it.
 */
public final class GraphShardManager implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(GraphShardManager.class);

    private final Communicator comm;
    private final ShardLayout layout;
    private final EdgeWeights weights;
    private final ShardSteps steps;
    private final Ring ring;
    private final GradientBridge.Registry bridges = new GradientBridge.Registry();
    private final ShardResources resources;
    private AggregationMode mode = AggregationMode.SAR;
    private Aggregator aggregator;
    /** PIPELINED mode's settings, epochs and exchanges; a new one whenever the mode, smoothing or staleness is set. */
    private Pipeline pipeline;
    /** The ids random choices are keyed by: the graph's numbering until {@link #nodeIds(Tensor)} sets others. */
    private NodeNumbering numbering;

    /**
     * Builds the shards of this rank. Collective over {@code world}.
     *
     * @param offsets     partition p owns global nodes [offsets[p], offsets[p+1]); length size+1
     * @param localInEdges rows: this rank's nodes (local index); columns: global source ids;
     *                     unweighted (see {@link #requireUnweighted})
     * @throws io.mn4j.communicator.JobInputException on every rank when the input of any rank is
     *     wrong (naming that rank and what was wrong), or when the ranks pass different offsets
     */
    public static GraphShardManager build(Communicator world, long[] offsets, Csr localInEdges) {
        // Checked on every rank together: a rank refusing its input alone would leave the others
        // waiting in the first exchange.
        Agreement.agree(world, "building the graph shard manager", () -> {
            ShardLayout.checkInput(world, offsets, localInEdges);
            return null;
        });
        Agreement.requireSame(world, "partition offsets", Arrays.toString(offsets));
        return new GraphShardManager(world, offsets.clone(), localInEdges);
    }

    /**
     * Builds the shards of a loaded partition ({@code PartitionReader.load(comm, dir)}):
     * partition k is rank k. Collective over {@code world}. A weighted graph is rejected on every
     * rank (see {@link #requireUnweighted}).
     */
    public static GraphShardManager build(Communicator world, PartitionData part) {
        PartitionMetadata meta = part.metadata();
        requireUnweighted(meta);
        Agreement.agree(world, "building the graph shard manager", () -> {
            if (meta.numParts() != world.size() || part.part() != world.rank()) {
                throw new IllegalArgumentException("rank " + world.rank() + " of " + world.size() + " was given partition "
                        + part.part() + " of " + meta.numParts());
            }
            return null;
        });
        long[] offsets = new long[meta.numParts() + 1];
        for (int k = 0; k < meta.numParts(); k++) {
            offsets[k] = meta.offset(k);
        }
        offsets[meta.numParts()] = meta.numNodes();
        return build(world, offsets, part.adjacency());
    }

    /**
     * Rejects a weighted partitioned graph: the aggregations weight edges by their counts (GCN's
     * normalisation, SAGE's mean, GAT's attention), so edge weights would be silently ignored.
     * Depends on the metadata only, which every rank reads alike: every rank throws, before any
     * communication.
     *
     * @throws IllegalArgumentException naming the weights when {@code meta.weighted()}
     */
    public static void requireUnweighted(PartitionMetadata meta) {
        if (meta.weighted()) {
            throw new IllegalArgumentException("the partitioned graph is weighted (" + PartitionMetadata.FILE + " says weighted, each part has "
                    + "edge_weight.npy), " + ShardLayout.UNWEIGHTED_ONLY);
        }
    }

    private GraphShardManager(Communicator world, long[] offsets, Csr inEdges) {
        this.comm = world.split(0, world.rank());
        this.pipeline = new Pipeline(comm, 0, 1);
        this.layout = new ShardLayout(comm, offsets, inEdges);
        this.weights = new EdgeWeights(layout);
        this.steps = new ShardSteps(layout.numLocal());
        this.ring = new Ring(layout);
        this.numbering = NodeNumbering.ofGraph(layout);
        this.resources = new ShardResources(layout, weights, steps, ring, bridges, () -> pipeline, () -> numbering, this);
        this.aggregator = mode.aggregator(resources);
    }

    public AggregationMode mode() {
        return mode;
    }

    /**
     * Chooses the aggregation mode; every rank must choose the same. Collective: it also ends the
     * pipeline of {@link AggregationMode#PIPELINED} mode (it takes the rows and gradients still in
     * flight and forgets the stale ones), so that after it the next training epoch, which
     * {@link #nextEpoch} starts, is exact again, whatever model ran before.
     */
    public GraphShardManager mode(AggregationMode m) {
        restartPipeline(pipeline.smoothing(), pipeline.staleness());
        this.mode = m;
        this.aggregator = m.aggregator(resources);
        return this;
    }

    /**
     * Marks the start of a training epoch (one forward and backward pass). In
     * {@link AggregationMode#PIPELINED} mode the k-th training aggregation of an epoch reads the
     * rows (and, in backward, the gradients) that the k-th of the previous epoch sent; other modes
     * ignore it. Collective, like the aggregations.
     *
     * @throws IllegalStateException in PIPELINED mode, if the epoch that ends made fewer training
     *     aggregations than the pipeline's first (more are refused at the extra one)
     */
    public GraphShardManager nextEpoch() {
        pipeline.nextEpoch();
        return this;
    }

    /**
     * PIPELINED mode: stale boundary rows and gradients enter as running averages,
     * {@code s ← γ·s + (1−γ)·received}, starting from the first epoch's (PipeGCN-GF's smoothing;
     * PipeGCN uses γ = 0.95). 0, the default, uses them as received. Collective, like
     * {@link #mode}: it ends the pipeline too.
     *
     * @throws IllegalArgumentException unless 0 ≤ γ < 1
     */
    public GraphShardManager smoothing(double gamma) {
        if (!(gamma >= 0 && gamma < 1)) {
            throw new IllegalArgumentException("smoothing must be in [0, 1), got " + gamma);
        }
        restartPipeline(gamma, pipeline.staleness());
        return this;
    }

    /**
     * PIPELINED mode: how many epochs old the rows and gradients a training pass reads may be. A
     * pass reads the newest ones that have fully arrived from every partner if they are at most
     * this old, and otherwise waits for the oldest that are not too old; the default, 1, is
     * PipeGCN's: always the previous epoch's. Above 1, which epoch's a pass reads depends on
     * timing, so results are no longer reproducible run to run. Collective, like {@link #mode}: it
     * ends the pipeline too.
     *
     * @throws IllegalArgumentException unless {@code epochs} ≥ 1
     */
    public GraphShardManager staleness(int epochs) {
        if (epochs < 1) {
            throw new IllegalArgumentException("staleness must be at least 1 epoch, got " + epochs);
        }
        restartPipeline(pipeline.smoothing(), epochs);
        return this;
    }

    /**
     * Sets the ids that random choices over nodes and edges are keyed by (dropout masks, attention
     * dropout): {@code ids[i]} for local node i. Give the original graph's ids (the partition's
     * {@code originalIds()}) and every way of cutting the graph, on any number of ranks, draws the
     * same; by default the graph's own numbering is used, which differs between partitionings.
     * Collective: each rank learns the ids of the rows it reads from its partners in one exchange.
     *
     * @throws io.mn4j.communicator.JobInputException on every rank when any rank's ids are not
     *     int64 with one entry per local node
     */
    public GraphShardManager nodeIds(Tensor ids) {
        Agreement.agree(comm, "setting the node ids", () -> {
            if (ids.dim() != 1 || ids.size(0) != layout.numLocal() || ids.scalar_type().value != torch.ScalarType.Long.value) {
                throw new IllegalArgumentException("node ids on rank " + layout.rank() + ": expected int64 [" + layout.numLocal()
                        + "], one per local node, got " + Tensors.describe(ids));
            }
            return null;
        });
        this.numbering = NodeNumbering.exchange(layout, ids.contiguous());
        return this;
    }

    /** The ids of this rank's nodes that random choices are keyed by (see {@link #nodeIds(Tensor)}). */
    public long[] nodeIds() {
        return numbering.local().clone();
    }

    /** Remote blocks fetched ahead of the one being aggregated (SAR and SEQUENTIAL modes). */
    public GraphShardManager prefetchDepth(int depth) {
        ring.depth(depth);
        return this;
    }

    /**
     * In SAR mode, the most edges one step of a {@link ShardOperator}'s forward or rematerialized
     * backward takes: a larger shard (above all this rank's own) is taken in ranges of its rows,
     * so that a step's temporaries scale with the range instead of the shard. 0 takes whole
     * shards; negative restores the default, a quarter of this rank's node count (at least 16384).
     */
    public GraphShardManager edgesPerStep(long edges) {
        steps.edgesPerStep(edges);
        return this;
    }

    /**
     * This manager in one-shot mode (SAR's {@code get_full_partition_graph}): one exchange of all
     * boundary rows per aggregation. Collective, as {@link #mode} is.
     */
    public GraphShardManager fullPartitionGraph() {
        return mode(AggregationMode.ONE_SHOT);
    }

    public long numLocalNodes() {
        return layout.numLocal();
    }

    /** Global id of this rank's first node. */
    public long firstNode() {
        return layout.firstNode();
    }

    public long numNodes() {
        return layout.numNodes();
    }

    public int rank() {
        return layout.rank();
    }

    public int parts() {
        return layout.parts();
    }

    /** The communicator the manager exchanges on (a private split of the world). */
    public Communicator communicator() {
        return comm;
    }

    /** In-degree of every local node (edges into it, over all partitions, stored self-loops included), float64. */
    public Tensor inDegree() {
        return layout.inDegree();
    }

    /** Rows this rank sends to {@code partner} per exchange of one feature row each. */
    public long rowsSentTo(int partner) {
        return layout.rowsSentTo(partner);
    }

    /** Rows this rank receives from {@code partner} per exchange. */
    public long rowsReceivedFrom(int partner) {
        return layout.rowsReceivedFrom(partner);
    }

    /**
     * Aggregations whose Java hooks this manager keeps: their autograd graph is alive and their
     * backward has not finished. For tests and leak checks of hook lifetimes.
     */
    public int liveBridges() {
        return bridges.size();
    }

    /**
     * {@code out[v] = Σ_(u→v) w_uv·x[u]} over in-edges from every partition, with the weighting of
     * {@code norm}; x holds this rank's rows. Differentiable in x in every mode.
     */
    public Tensor aggregate(Tensor x, EdgeNorm norm) {
        layout.checkRows(x, "aggregate");
        return inScopeOfItsOwn(() -> aggregator.aggregate(x, norm));
    }

    /**
     * Runs {@code op} over every shard: {@code dst} holds inputs of this rank's nodes as
     * destinations, {@code src} the rows other ranks fetch as sources (both [numLocal, *]).
     * Differentiable in {@code dst}, {@code src} and the operator's parameters in every mode; in
     * SAR mode by recomputing one shard at a time in backward.
     */
    public Tensor aggregate(Tensor dst, Tensor src, ShardOperator op) {
        layout.checkRows(dst, "aggregate");
        layout.checkRows(src, "aggregate");
        return inScopeOfItsOwn(() -> aggregator.aggregate(dst, src, op));
    }

    /**
     * Runs an aggregation in a scope of its own: its temporaries (fetched blocks, partial sums,
     * proxies) go when it returns, not when the caller's scope closes; the result joins the caller's.
     */
    private static Tensor inScopeOfItsOwn(Supplier<Tensor> aggregation) {
        PointerScope outer = PointerScope.getInnerScope();
        try (PointerScope scope = new PointerScope()) {
            return Scopes.escape(scope, outer, aggregation.get());
        }
    }

    private void restartPipeline(double gamma, int epochs) {
        pipeline.close();
        pipeline = new Pipeline(comm, gamma, epochs);
    }

    /**
     * Releases what this rank holds and closes the manager's communicator. Collective: it ends
     * the pipeline of PIPELINED mode, whose last exchanges it completes with the partners. A rank
     * that fails in a training epoch and closes its manager on the way out (try-with-resources)
     * gets through this; a program that catches such an error on some ranks only and closes the
     * manager somewhere else may wait here on partners that no longer take part.
     */
    @Override
    public void close() {
        pipeline.close();
        layout.close();
        weights.close();
        steps.close();
        comm.close();
        LOG.debug("rank {}: shard manager closed", layout.rank());
    }
}
