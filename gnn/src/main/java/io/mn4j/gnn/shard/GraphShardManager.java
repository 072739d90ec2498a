package io.mn4j.gnn.shard;

import io.mn4j.communicator.Communicator;
import io.mn4j.functions.autograd.CustomFunction;
import io.mn4j.functions.autograd.GradientBridge;
import io.mn4j.functions.Functions;
import io.mn4j.gnn.graph.Csr;
import io.mn4j.gnn.kernel.CsrAggregation;
import io.mn4j.gnn.partition.PartitionData;
import io.mn4j.gnn.partition.PartitionMetadata;
import io.mn4j.communicator.Agreement;
import io.mn4j.tensor.Scopes;
import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one rank holds of a partitioned graph, and neighbourhood aggregation across ranks.
 *
 * <p>Partition p owns the contiguous node ids {@code [offsets[p], offsets[p+1])}; an edge belongs
 * to the partition of its destination. For rank i, shard j holds the in-edges of i's nodes whose
 * sources j owns, with the rows of j they read; rank j knows which of its rows to send to i.
 * Degrees are exchanged once, at construction.
 *
 * <p>Self-loops stored in the graph are treated as PyG treats them: sums and means (SAGE) count
 * every stored edge; GCN's normalisation ({@code add_remaining_self_loops}) and attention
 * operators with {@link ShardOperator#selfLoops()} (GAT: remove, then add) give every node exactly
 * one self-loop, however many it stores.
 *
 * <p>Layers call {@link #aggregate(Tensor, EdgeNorm)} (plain weighted sums: GCN, mean-SAGE) or
 * {@link #aggregate(Tensor, Tensor, ShardOperator)} (anything else, e.g. attention); the
 * {@link AggregationMode} decides how remote shards are fetched and how gradients go back.
 * Collective: every rank calls the same aggregations in the same order.
 *
 * <p>Memory: each aggregation runs in a {@code PointerScope} of its own and each shard step in
 * another, so fetched blocks, per-shard states, recomputed graphs and gradients are released as
 * soon as they are used, not when the caller's scope closes; only the result (in the caller's
 * scope) and what autograd saved outlive the call. What SAR's backward reads (the layer's inputs,
 * the final softmax state, the output) is held by handles of its own and closed once backward has
 * used it. In PIPELINED mode the pipeline ({@code Pipeline}) also holds, per training
 * aggregation, the rows and gradients in flight to and from the partners (one epoch's worth each
 * way, up to {@link #staleness} epochs' when partners fall behind, and the newest arrived while a
 * later pass may read it) and, with smoothing, their running averages, until {@link #mode},
 * {@link #smoothing}, {@link #staleness} or {@link #close} ends it.
 */
public final class GraphShardManager implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(GraphShardManager.class);
    private static final int TAG_FORWARD = 11;
    private static final int TAG_BACKWARD = 12;
    private static final int TAG_REFETCH = 13;

    private final Communicator comm;
    private final int rank;
    private final int parts;
    private final long numLocal;
    private final long[] offsets;
    private final Shard[] shards;
    /** The local shard without stored self-loops (the shard itself when it stores none). */
    private final Csr localWithoutLoops;
    private final Tensor inDegree;
    /** In-degree without stored self-loops, float64: GCN's degree is this plus its one self-loop. */
    private final Tensor degreeWithoutLoops;
    /** Aggregations by the weighted shard matrices, per weighting, built once (float64 weights). */
    private final Map<EdgeNorm, CsrAggregation[]> weighted = new EnumMap<>(EdgeNorm.class);
    private final Map<EdgeNorm, CsrAggregation> haloGraphs = new EnumMap<>(EdgeNorm.class);
    private final Map<Integer, Tensor> selfLoops = new java.util.concurrent.ConcurrentHashMap<>();
    /** Shards cut into row ranges of at most {@link #edgesPerStep} edges (SAR mode, ShardOperators). */
    private final Map<Csr, List<Piece>> pieces = new java.util.IdentityHashMap<>();
    private long edgesPerStep = -1;
    private final GradientBridge.Registry bridges = new GradientBridge.Registry();
    private AggregationMode mode = AggregationMode.SAR;
    private int prefetchDepth = 1;
    /**
     * PIPELINED mode's settings, epochs and exchanges; a new one whenever the mode, smoothing or
     * staleness is set.
     */
    private Pipeline pipeline;

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
            checkInput(world, offsets, localInEdges);
            return null;
        });
        Agreement.requireSame(world, "partition offsets", Arrays.toString(offsets));
        return new GraphShardManager(world, offsets.clone(), localInEdges);
    }

    private static void checkInput(Communicator world, long[] offsets, Csr localInEdges) {
        if (localInEdges.hasWeight()) {
            throw new IllegalArgumentException("the in-edge matrix is weighted, " + UNWEIGHTED_ONLY);
        }
        if (offsets.length != world.size() + 1) {
            throw new IllegalArgumentException("partition offsets describe " + (offsets.length - 1)
                    + " partitions but the job has " + world.size() + " ranks");
        }
        boolean ordered = offsets[0] == 0;
        for (int p = 0; p < world.size(); p++) {
            ordered &= offsets[p] <= offsets[p + 1];
        }
        if (!ordered) {
            throw new IllegalArgumentException("partition offsets " + Arrays.toString(offsets) + " must start at 0 and not decrease");
        }
        long expected = offsets[world.rank() + 1] - offsets[world.rank()];
        if (localInEdges.numRows() != expected) {
            throw new IllegalArgumentException("rank " + world.rank() + " owns " + expected
                    + " nodes but its in-edge matrix has " + localInEdges.numRows() + " rows");
        }
        long numNodes = offsets[world.size()];
        Tensor col = localInEdges.col();
        if (col.numel() > 0) {
            try (PointerScope s = new PointerScope()) {
                long min = col.min().item_long(), max = col.max().item_long();
                if (min < 0 || max >= numNodes) {
                    throw new IllegalArgumentException("the in-edge matrix has source ids in [" + min + ", " + max
                            + "], outside the graph's nodes [0, " + numNodes + ")");
                }
            }
        }
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

    private static final String UNWEIGHTED_ONLY = "but the shard manager aggregates unweighted graphs only (its GCN, SAGE and GAT"
            + " weightings count edges): it would ignore the weights; drop them (Graph.withEdgeWeight(null)) before partitioning";

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
                    + "edge_weight.npy), " + UNWEIGHTED_ONLY);
        }
    }

    private GraphShardManager(Communicator world, long[] offsets, Csr inEdges) {
        this.comm = world.split(0, world.rank());
        this.pipeline = new Pipeline(comm, 0, 1);
        this.rank = comm.rank();
        this.parts = comm.size();
        this.offsets = offsets;
        this.numLocal = offsets[rank + 1] - offsets[rank];
        this.shards = cutShards(inEdges);
        this.localWithoutLoops = withoutSelfLoops(shards[rank].edges);
        try (PointerScope s = new PointerScope()) {
            this.inDegree = Scopes.own(inEdges.rowCounts().to(torch.ScalarType.Double));
            Tensor loops = shards[rank].edges.rowCounts().sub(localWithoutLoops.rowCounts());
            this.degreeWithoutLoops = Scopes.own(inDegree.sub(loops));
        }
        exchangeRowsAndDegrees();
    }

    /** {@code local} (square, local rows and columns) without its entries v→v; {@code local} itself when it has none. */
    private static Csr withoutSelfLoops(Csr local) {
        return local.diagonalCount() == 0 ? local : local.withoutDiagonal();
    }

    /** Splits the in-edges by the partition owning their source, compacting the source rows. */
    private Shard[] cutShards(Csr inEdges) {
        long[] rowptr = inEdges.rowptrArray();
        long[] src = Tensors.toLongArray(inEdges.col());
        int n = (int) numLocal;
        int[] edgesPer = new int[parts];
        int[] owner = new int[src.length];
        for (int e = 0; e < src.length; e++) {
            int p = PartitionMetadata.owner(offsets, src[e]);
            owner[e] = p;
            edgesPer[p]++;
        }
        Shard[] out = new Shard[parts];
        for (int p = 0; p < parts; p++) {
            // sorted distinct partner-local rows read by this shard
            long[] rows = new long[edgesPer[p]];
            int k = 0;
            for (int e = 0; e < src.length; e++) {
                if (owner[e] == p) {
                    rows[k++] = src[e] - offsets[p];
                }
            }
            long[] distinct = p == rank ? null : Arrays.stream(rows).sorted().distinct().toArray();
            long[] ptr = new long[n + 1];
            long[] col = new long[edgesPer[p]];
            int c = 0;
            for (int v = 0; v < n; v++) {
                for (long e = rowptr[v]; e < rowptr[v + 1]; e++) {
                    if (owner[(int) e] == p) {
                        long local = src[(int) e] - offsets[p];
                        col[c++] = distinct == null ? local : Arrays.binarySearch(distinct, local);
                    }
                }
                ptr[v + 1] = c;
            }
            long width = distinct == null ? numLocal : distinct.length;
            Csr edges = Csr.of(numLocal, width, ptr, col, null);
            Tensor need = Scopes.own(distinct == null ? torch.arange(new Scalar(numLocal)) : Tensors.longs(distinct));
            out[p] = new Shard(p, need, edges);
        }
        return out;
    }

    /** Tells every partner which of its rows we read; learns which of ours they read; their degrees (for GCN). */
    private void exchangeRowsAndDegrees() {
        List<Tensor> needs = new ArrayList<>(parts);
        for (Shard s : shards) {
            needs.add(s.partner == rank ? Tensors.longs(new long[0]) : s.needRows);
        }
        List<Tensor> asked = comm.alltoall(needs);
        List<Tensor> degrees = new ArrayList<>(parts);
        for (int p = 0; p < parts; p++) {
            shards[p].sendRows = Scopes.own(p == rank ? Tensors.longs(new long[0]) : asked.get(p));
            degrees.add(degreeWithoutLoops.index_select(0, shards[p].sendRows));
        }
        List<Tensor> theirDegrees = comm.alltoall(degrees);
        for (int p = 0; p < parts; p++) {
            shards[p].sourceDegree = Scopes.own(p == rank ? degreeWithoutLoops : theirDegrees.get(p));
        }
    }

    // ------------------------------------------------------------------------------------------

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
     * timing, so results are no longer reproducible run to run; a rank then waits for a slow
     * partner only once it is more than {@code epochs} behind. Collective, like {@link #mode}: it
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

    /** Remote blocks fetched ahead of the one being aggregated (SAR and sequential modes). */
    public GraphShardManager prefetchDepth(int depth) {
        this.prefetchDepth = Math.max(0, depth);
        return this;
    }

    /**
     * In SAR mode, the most edges one step of a {@link ShardOperator}'s forward or rematerialized
     * backward takes: a larger shard (above all this rank's own, which holds most edges of a good
     * partition) is taken in ranges of its rows, so that a step's temporaries, per edge (attention
     * scores) and per node (partial states, gradients), scale with the range instead of the shard.
     * 0 takes whole shards; negative restores the default, a quarter of this rank's node count (at
     * least 16384): a step's work follows its edges, so small steps save memory at little cost in time.
     */
    public synchronized GraphShardManager edgesPerStep(long edges) {
        this.edgesPerStep = edges;
        closePieces();
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
        return numLocal;
    }

    /** Global id of this rank's first node. */
    public long firstNode() {
        return offsets[rank];
    }

    public long numNodes() {
        return offsets[parts];
    }

    public int rank() {
        return rank;
    }

    public int parts() {
        return parts;
    }

    /** The communicator the manager exchanges on (a private split of the world). */
    public Communicator communicator() {
        return comm;
    }

    /** In-degree of every local node (edges into it, over all partitions, stored self-loops included), float64. */
    public Tensor inDegree() {
        return inDegree;
    }

    /** Rows this rank sends to {@code partner} per exchange of one feature row each. */
    public long rowsSentTo(int partner) {
        return partner == rank ? 0 : shards[partner].sendRows.size(0);
    }

    /** Rows this rank receives from {@code partner} per exchange. */
    public long rowsReceivedFrom(int partner) {
        return partner == rank ? 0 : shards[partner].numNeeded();
    }

    /**
     * Aggregations whose Java hooks this manager keeps: their autograd graph is alive and their
     * backward has not finished. For tests and leak checks of hook lifetimes.
     */
    public int liveBridges() {
        return bridges.size();
    }

    // ------------------------------------------------------------------------------------------
    // Weighted sums

    /**
     * {@code out[v] = Σ_(u→v) w_uv·x[u]} over in-edges from every partition, with the weighting of
     * {@code norm}; x holds this rank's rows. Differentiable in x in every mode.
     */
    public Tensor aggregate(Tensor x, EdgeNorm norm) {
        checkRows(x, "aggregate");
        boolean stale = readsStaleRows(x);
        // Temporaries of this call (fetched blocks, partial sums, proxies) are released when it
        // returns; only the result and what autograd saved live on. Without this, every one of
        // them would live until the caller's scope closes (an epoch) or the GC runs.
        PointerScope outer = PointerScope.getInnerScope();
        try (PointerScope scope = new PointerScope()) {
            // Without autograd, mode 2 has nothing to keep: it is mode 1's ring.
            boolean withGraph = x.requires_grad() && org.bytedeco.pytorch.GradMode.is_enabled();
            if (parts > 1 && (mode == AggregationMode.SAR || mode == AggregationMode.SEQUENTIAL && !withGraph)) {
                return Scopes.escape(scope, outer, sarSum(x, norm, withGraph));
            }
            Tensor local = weights(norm)[rank].apply(x);
            if (norm == EdgeNorm.GCN) {
                local = torch.addcmul(local, x, selfLoopWeight(x));
            }
            Tensor out;
            if (parts == 1) {
                out = local;
            } else {
                switch (mode) {
                    case ONE_SHOT:
                    case PIPELINED:
                        out = local.add(haloGraph(norm).apply(boundaryRows(x, stale)));
                        break;
                    default:
                        out = local.add(sequentialSum(x, norm));
                }
            }
            return Scopes.escape(scope, outer, out);
        }
    }

    /**
     * Mode 1 for sums, the local block and self loops included: one output buffer that every block
     * is added into without autograd. Backward computes the local gradient (Aᵀ·g and the self
     * loops) into one buffer, sends A_jᵀ·g home and adds what comes back into it: no re-fetch, no
     * second input-sized buffer.
     */
    private Tensor sarSum(Tensor x, EdgeNorm norm, boolean withGraph) {
        CsrAggregation[] w = weights(norm);
        Tensor data = x.detach().contiguous();
        Tensor selfWeight = norm == EdgeNorm.GCN ? selfLoopWeight(x) : null;
        Tensor acc;
        try (NoGradGuard g = new NoGradGuard()) {
            acc = w[rank].forward(data);
            if (selfWeight != null) {
                acc.addcmul_(data, selfWeight);
            }
            Ring.fetch(comm, TAG_FORWARD, prefetchDepth, p -> data.index_select(0, shards[p].sendRows),
                    (p, block) -> {
                        try (Tensor part = w[p].forward(block)) {
                            acc.add_(part);
                        }
                    });
        }
        if (!withGraph) {
            return acc;
        }
        // Backward must not touch x or acc (their handles belong to the caller's scope).
        long width = acc.size(1);
        torch.ScalarType type = acc.scalar_type();
        return CustomFunction.apply("SAR sum", List.of(x), List.of(acc), grads -> {
            // An unused output still takes part in the exchange (with zeros).
            Tensor g = grads.get(0) != null ? grads.get(0) : torch.zeros(new long[] {numLocal, width}, new TensorOptions(type));
            // Grad mode is on here only under create_graph: the local part stays differentiable.
            boolean differentiable = org.bytedeco.pytorch.GradMode.is_enabled();
            Tensor grad = differentiable ? w[rank].transpose().apply(g) : w[rank].transposeForward(g);
            if (selfWeight != null) {
                grad = differentiable ? grad.addcmul(g, selfWeight) : grad.addcmul_(g, selfWeight);
            }
            Tensor into = differentiable ? torch.zeros_like(grad) : grad;
            pushGradients(into, p -> w[p].transposeForward(g));
            return List.of(differentiable ? grad.add(into) : grad);
        }, CustomFunction.Schedule.NATURAL, this).outputs().get(0);
    }

    /** Mode 2 for sums: the same ring, each fetched block in the autograd graph. */
    private Tensor sequentialSum(Tensor x, EdgeNorm norm) {
        CsrAggregation[] w = weights(norm);
        Tensor data = x.detach().contiguous();
        GradientBridge bridge = new GradientBridge(bridges, x);
        Tensor[] blockGrads = new Tensor[parts];
        Tensor[] acc = {null};
        PointerScope callScope = PointerScope.getInnerScope();
        Ring.fetch(comm, TAG_FORWARD, prefetchDepth, p -> data.index_select(0, shards[p].sendRows),
                (p, block) -> {
                    try (PointerScope step = new PointerScope()) {
                        Tensor fetched = bridge.attach(block);
                        bridge.onGrad(fetched, g -> blockGrads[p] = g);
                        Tensor part = w[p].apply(fetched);
                        Tensor next = Scopes.escape(step, callScope, acc[0] == null ? part : acc[0].add(part));
                        if (acc[0] != null) {
                            acc[0].close();
                        }
                        acc[0] = next;
                    }
                });
        bridge.onInputGrad(0, g -> pushAndRelease(g, blockGrads));
        return acc[0];
    }

    /** The extra input gradient of mode 2: the fetched blocks' gradients pushed home, each released once sent. */
    private Tensor pushAndRelease(Tensor like, Tensor[] blockGrads) {
        try {
            Tensor extra = torch.zeros_like(like);
            pushGradients(extra, p -> {
                Tensor g = blockGrads[p];
                blockGrads[p] = null;
                return g;
            });
            return extra;
        } finally {
            Scopes.closeAll(blockGrads);
            Arrays.fill(blockGrads, null);
        }
    }

    /**
     * The backward ring: sends {@code gradFor.apply(p)} (gradient of the rows fetched from p; null
     * means zeros) to each partner p, and adds what partners send into the rows of {@code into}
     * they read. The ring owns what {@code gradFor} returns and releases it once sent, so a step's
     * payload and received block go with the step, not with the whole exchange.
     */
    private void pushGradients(Tensor into, java.util.function.IntFunction<Tensor> gradFor) {
        long features = into.size(1);
        Ring.pushBack(comm, TAG_BACKWARD, prefetchDepth, p -> {
            Tensor g = gradFor.apply(p);
            // isend makes a strided payload contiguous itself (and keeps that copy while in flight).
            return g != null ? g : torch.zeros(new long[] {shards[p].numNeeded(), features}, into.options());
        }, (p, grad) -> addRowGradients(into, p, grad));
    }

    /** Adds the gradients partner p sent for the rows it reads into those rows of {@code into}. */
    private void addRowGradients(Tensor into, int p, Tensor grad) {
        try (Tensor typed = grad.to(into.scalar_type())) {
            into.index_add_(0, shards[p].sendRows, typed);
        }
    }

    /**
     * The remote rows this rank reads (modes 3 and 4), in partner order (the column order of the
     * halo graph): one epoch stale if {@code stale}, else fresh.
     */
    private Tensor boundaryRows(Tensor x, boolean stale) {
        return stale ? staleBoundaryRows(x) : fetchAllBoundaryRows(x);
    }

    /**
     * Whether an aggregation of {@code x} is a pipelined training pass: PIPELINED mode, with
     * {@code x} in autograd's graph (an input that needs no gradient, like a first layer's raw
     * features, is read fresh: it takes no part in the pipeline). Checked on one rank too, where
     * nothing is stale, so that a program missing {@link #nextEpoch} fails at once, not when it
     * first runs on several ranks.
     */
    private boolean readsStaleRows(Tensor x) {
        boolean stale = mode == AggregationMode.PIPELINED && x.requires_grad() && org.bytedeco.pytorch.GradMode.is_enabled();
        if (stale) {
            pipeline.requireEpoch();
        }
        return stale;
    }

    /**
     * PipeGCN's boundary rows: what every partner sent in the previous epoch's matching
     * aggregation, while this epoch's rows of {@code x} go out to be read in the next. In backward
     * the same holds for their gradients: the rows' gradients are sent home, and {@code x} gets
     * the gradients its partners sent the epoch before. The first epoch exchanges and waits, so it
     * is exact, and the second reads the first's rows and gradients again. Each forward's
     * backward must run once, before the next epoch's forward of the same aggregation.
     */
    private Tensor staleBoundaryRows(Tensor x) {
        // The backward belongs to this pipeline, even if mode() has started another since.
        Pipeline pipe = pipeline;
        Pipeline.Slot slot = pipe.nextForward();
        Tensor data = x.detach();
        Tensor[] rows = new Tensor[parts];
        for (int p = 0; p < parts; p++) {
            if (p != rank) {
                rows[p] = data.index_select(0, shards[p].sendRows);
            }
        }
        pipe.settle();
        Tensor[] got = slot.rows().exchange(rows);
        Tensor halo;
        try {
            halo = catPartners(p -> got[p]);
        } finally {
            Scopes.closeAll(got);
        }
        long width = x.size(1);
        torch.ScalarType type = Tensors.type(x);
        String name = "pipelined aggregation " + slot.index();
        return CustomFunction.apply(name, List.of(x), List.of(halo), grads -> {
            // Grad mode is on inside the backward pass only under create_graph.
            if (org.bytedeco.pytorch.GradMode.is_enabled()) {
                throw new UnsupportedOperationException(name + ": backward with create_graph=true is not supported in PIPELINED "
                        + "mode: the gradients received from other ranks carry no history");
            }
            Tensor g = grads.get(0);
            Tensor[] back = new Tensor[parts];
            long offset = 0;
            for (int p = 0; p < parts; p++) {
                if (p != rank) {
                    long n = shards[p].numNeeded();
                    back[p] = g != null ? g.narrow(0, offset, n) : torch.zeros(new long[] {n, width}, new TensorOptions(type));
                    offset += n;
                }
            }
            pipe.settle();
            pipe.backward();
            Tensor[] stale = slot.gradients().exchange(back);
            try {
                Tensor into = torch.zeros(new long[] {numLocal, width}, new TensorOptions(type));
                for (int p = 0; p < parts; p++) {
                    if (p != rank) {
                        addRowGradients(into, p, stale[p]);
                    }
                }
                return List.of(into);
            } finally {
                Scopes.closeAll(stale);
            }
        }, CustomFunction.Schedule.NATURAL, this, "in PIPELINED mode each forward's gradients are exchanged once (the "
                + "partners pair them with their own); run the forward again").outputs().get(0);
    }

    /**
     * All remote rows this rank reads, concatenated in partner order (the column order of the
     * halo graph), through the differentiable alltoall: its backward sends the gradients home.
     */
    Tensor fetchAllBoundaryRows(Tensor x) {
        List<Tensor> sends = new ArrayList<>(parts);
        for (int p = 0; p < parts; p++) {
            sends.add(x.index_select(0, shards[p].sendRows));
        }
        List<Tensor> got = Functions.alltoall(comm, sends);
        return catPartners(got::get);
    }

    /** The blocks of every partner (not this rank's), concatenated in partner order. */
    private Tensor catPartners(java.util.function.IntFunction<Tensor> blockOf) {
        List<Tensor> remote = new ArrayList<>(parts - 1);
        for (int p = 0; p < parts; p++) {
            if (p != rank) {
                remote.add(blockOf.apply(p));
            }
        }
        return cat(remote);
    }

    // ------------------------------------------------------------------------------------------
    // Any aggregation, through a ShardOperator

    /**
     * Runs {@code op} over every shard: {@code dst} holds inputs of this rank's nodes as
     * destinations, {@code src} the rows other ranks fetch as sources (both [numLocal, *]).
     * Differentiable in {@code dst}, {@code src} and the operator's parameters in every mode; in
     * SAR mode by recomputing one shard at a time in backward.
     */
    public Tensor aggregate(Tensor dst, Tensor src, ShardOperator op) {
        checkRows(dst, "aggregate");
        checkRows(src, "aggregate");
        boolean stale = readsStaleRows(src);
        Csr local = op.selfLoops() ? localEdgesWithSelfLoops() : shards[rank].edges;
        // As in aggregate(x, norm): mode 2 bridges the fetched rows' gradients home, so it needs
        // src to require grad; otherwise mode 1, which bridges whatever does (dst, parameters).
        boolean srcGraph = src.requires_grad() && org.bytedeco.pytorch.GradMode.is_enabled();
        // As in aggregate(x, norm): the call's temporaries go when it returns.
        PointerScope outer = PointerScope.getInnerScope();
        try (PointerScope scope = new PointerScope()) {
            Tensor out;
            if (mode == AggregationMode.ONE_SHOT || mode == AggregationMode.PIPELINED) {
                List<Tensor> state = op.shard(local, dst, op.sources(src));
                if (parts > 1) {
                    state = op.combine(state, op.shard(haloGraph(EdgeNorm.SUM).matrix(), dst, op.sources(boundaryRows(src, stale))));
                }
                out = op.finish(state);
            } else if (mode == AggregationMode.SEQUENTIAL && srcGraph) {
                out = sequentialGeneric(local, dst, src, op);
            } else {
                out = sarGeneric(local, dst, src, op);
            }
            return Scopes.escape(scope, outer, out);
        }
    }

    /**
     * {@code step} in a scope of its own: the state it returns moves to {@code to} and replaces
     * {@code previous} (closed, except tensors the new state reuses); every other tensor it makes
     * is released at once, so one shard's temporaries live at a time.
     */
    private static List<Tensor> shardStep(PointerScope to, List<Tensor> previous, java.util.function.Supplier<List<Tensor>> step) {
        List<Tensor> next;
        try (PointerScope s = new PointerScope()) {
            next = step.get();
            for (Tensor t : next) {
                Scopes.escape(s, to, t);
            }
        }
        if (previous != null) {
            for (Tensor t : previous) {
                if (next.stream().noneMatch(n -> n == t)) {
                    t.close();
                }
            }
        }
        return next;
    }

    /** Rows {@code [from, from + rows)} of a shard and their edges. */
    private record Piece(Csr edges, long from, long rows) {
        Tensor of(Tensor t) {
            return t == null ? null : t.narrow(0, from, rows);
        }

        List<Tensor> of(List<Tensor> ts) {
            List<Tensor> out = new ArrayList<>(ts.size());
            ts.forEach(t -> out.add(of(t)));
            return out;
        }
    }

    /**
     * Runs {@code op} over {@code edges} reading the block of source rows {@code src}, merging into
     * {@code state.get(0)} (or starting it when {@code state} is empty); a shard cut into row ranges
     * (see {@link #edgesPerStep}) is run range by range, each range's merged rows written into the
     * state. The block's {@link ShardOperator#sources} are made once and released at the end.
     */
    private void accumulate(PointerScope to, List<List<Tensor>> state, ShardOperator op, Csr edges, Tensor dst, Tensor src) {
        try (PointerScope block = new PointerScope()) {
            List<Tensor> sources = op.sources(src);
            List<Piece> ranges = steps(edges);
            if (ranges.size() == 1) {
                if (state.isEmpty()) {
                    state.add(shardStep(to, null, () -> op.shard(edges, dst, sources)));
                } else {
                    state.set(0, shardStep(to, state.get(0), () -> op.combine(state.get(0), op.shard(edges, dst, sources))));
                }
                return;
            }
            accumulateRanges(to, state, op, ranges, dst, sources);
        }
    }

    private void accumulateRanges(PointerScope to, List<List<Tensor>> state, ShardOperator op, List<Piece> ranges, Tensor dst,
            List<Tensor> sources) {
        boolean first = state.isEmpty();
        List<Tensor> acc = first ? null : state.get(0);
        for (Piece piece : ranges) {
            try (PointerScope s = new PointerScope()) {
                List<Tensor> part = op.shard(piece.edges(), piece.of(dst), sources);
                if (acc == null || (!first && piece.from() == 0)) {
                    // New full-size state tensors, written range by range (never the operator's own
                    // tensors, which may be views of its inputs).
                    List<Tensor> fresh = new ArrayList<>(part.size());
                    for (int i = 0; i < part.size(); i++) {
                        Tensor t = first ? part.get(i) : acc.get(i);
                        fresh.add(t == null ? null : Scopes.escape(s, to, first ? torch.empty(fullRows(t), t.options(), null) : t.clone()));
                    }
                    if (acc != null) {
                        acc.forEach(t -> {
                            if (t != null) {
                                t.close();
                            }
                        });
                    }
                    acc = fresh;
                    if (first) {
                        state.add(acc);
                    } else {
                        state.set(0, acc);
                    }
                }
                List<Tensor> merged = first ? part : op.combine(piece.of(acc), part);
                for (int i = 0; i < acc.size(); i++) {
                    if (acc.get(i) != null) {
                        piece.of(acc.get(i)).copy_(merged.get(i));
                    }
                }
            }
        }
    }

    private long[] fullRows(Tensor t) {
        long[] shape = new long[(int) t.dim()];
        for (int d = 0; d < shape.length; d++) {
            shape[d] = t.size(d);
        }
        shape[0] = numLocal;
        return shape;
    }

    /** {@code edges} as ranges of rows with at most {@link #edgesPerStep} edges each (one range when small enough). */
    private synchronized List<Piece> steps(Csr edges) {
        long budget = edgesPerStep < 0 ? Math.max(16384, numLocal / 4) : edgesPerStep;
        if (budget == 0 || edges.nnz() <= budget || numLocal <= 1) {
            return List.of(new Piece(edges, 0, numLocal));
        }
        return pieces.computeIfAbsent(edges, e -> {
            long[] rp = e.rowptrArray();
            List<Piece> list = new ArrayList<>();
            int from = 0;
            while (from < numLocal) {
                int to = from + 1; // at least one row, however many edges it has
                while (to < numLocal && rp[to + 1] - rp[from] <= budget) {
                    to++;
                }
                list.add(new Piece(e.rows(from, to), from, to - from));
                from = to;
            }
            return list;
        });
    }

    private synchronized void closePieces() {
        pieces.values().forEach(list -> list.forEach(p -> p.edges().close()));
        pieces.clear();
    }

    private Tensor sequentialGeneric(Csr local, Tensor dst, Tensor src, ShardOperator op) {
        GradientBridge bridge = new GradientBridge(bridges, src);
        Tensor data = src.detach().contiguous();
        Tensor[] blockGrads = new Tensor[parts];
        PointerScope callScope = PointerScope.getInnerScope();
        List<List<Tensor>> state = new ArrayList<>(1);
        state.add(shardStep(callScope, null, () -> op.shard(local, dst, op.sources(src))));
        Ring.fetch(comm, TAG_FORWARD, prefetchDepth, p -> data.index_select(0, shards[p].sendRows),
                (p, block) -> state.set(0, shardStep(callScope, state.get(0), () -> {
                    Tensor fetched = bridge.attach(block);
                    bridge.onGrad(fetched, g -> blockGrads[p] = g);
                    return op.combine(state.get(0), op.shard(shards[p].edges, dst, op.sources(fetched)));
                })));
        bridge.onInputGrad(0, g -> pushAndRelease(g, blockGrads));
        return op.finish(state.get(0));
    }

    private Tensor sarGeneric(Csr local, Tensor dst, Tensor src, ShardOperator op) {
        PointerScope callScope = PointerScope.getInnerScope();
        Tensor dstData = dst.detach();
        Tensor srcData = src.detach().contiguous();
        List<List<Tensor>> state = new ArrayList<>(1);
        Tensor out;
        try (NoGradGuard g = new NoGradGuard()) {
            accumulate(callScope, state, op, local, dstData, srcData);
            Ring.fetch(comm, TAG_FORWARD, prefetchDepth, p -> srcData.index_select(0, shards[p].sendRows),
                    (p, block) -> accumulate(callScope, state, op, shards[p].edges, dstData, block));
            out = op.finish(state.get(0));
        }
        if (!org.bytedeco.pytorch.GradMode.is_enabled()) {
            return out;
        }
        // Inputs backward must reach: src, dst and the operator's parameters that need gradients.
        List<Tensor> inputs = new ArrayList<>(List.of(src, dst));
        inputs.addAll(op.parameters());
        boolean[] needed = new boolean[inputs.size()];
        // One tensor as both sources and destinations (attention over x·W): one gradient buffer,
        // delivered once, instead of two full-size ones that LibTorch would then add up.
        boolean shared = src == dst;
        List<Tensor> bridged = new ArrayList<>();
        for (int i = 0; i < inputs.size(); i++) {
            needed[i] = inputs.get(i).requires_grad() && !(shared && i == 1);
            if (needed[i]) {
                bridged.add(inputs.get(i));
            }
        }
        if (bridged.isEmpty()) {
            return out;
        }
        GradientBridge bridge = new GradientBridge(bridges, bridged.toArray(new Tensor[0]));
        Tensor result = bridge.attach(out);
        Tensor[][] extras = new Tensor[1][];
        // What the rematerialization reads must outlive this call and every scope of the caller
        // (backward comes later): handles of their own that the bridge keeps, closed when no
        // backward can come any more (after the backward, or when the graph goes without one).
        // Only the state the surrogate reads is kept, and the output is kept as (a detached view of)
        // the result, which holds the same values: out and the rest of the state go with this call.
        List<Tensor> finalState = new ArrayList<>();
        for (Tensor t : op.stateForBackward(state.get(0))) {
            finalState.add(t == null ? null : Scopes.own(t));
        }
        Tensor dstKept = Scopes.own(dstData), srcKept = Scopes.own(srcData), outKept = Scopes.own(result.detach());
        bridge.keep(dstKept, srcKept, outKept);
        bridge.keep(finalState.toArray(new Tensor[0]));
        // The surrogate reads the output, which the caller holds too: a change in place would give
        // wrong gradients without a word (autograd cannot see it), so backward refuses it, as
        // LibTorch does for the tensors its own nodes save. A detached view shares the counter.
        long outVersion = outKept._version();
        bridge.onGrad(result, g -> {
            try {
                if (outKept._version() != outVersion) {
                    throw new IllegalStateException(op.getClass().getSimpleName() + " in SAR mode: its output was modified"
                            + " by an in-place operation after the forward (version " + outKept._version() + ", expected "
                            + outVersion + "); its backward recomputes from that output. Use the out-of-place operation"
                            + " (e.g. relu instead of relu_) on it, or AggregationMode.SEQUENTIAL.");
                }
                extras[0] = rematerialize(g, op, local, dstKept, srcKept, finalState, outKept, needed, shared);
            } finally {
                g.close();
            }
        });
        for (int i = 0, b = 0; i < inputs.size(); i++) {
            if (needed[i]) {
                int k = i;
                bridge.onInputGrad(b++, g -> extras[0][k]);
            }
        }
        return result;
    }

    /**
     * SAR's backward for any operator: recompute each block's steps under autograd (the local
     * block, then the remote ones re-fetched in the ring), take the gradient of their surrogates,
     * keep the local parts and send the fetched rows' gradients to their owners.
     * Returns the extra gradients of src, dst (folded into src when they are one tensor) and each
     * parameter, in that order.
     */
    private Tensor[] rematerialize(Tensor gradOut, ShardOperator op, Csr local, Tensor dstData, Tensor srcData,
            List<Tensor> finalState, Tensor out, boolean[] needed, boolean shared) {
        List<Tensor> params = op.parameters();
        Tensor[] sums = new Tensor[2 + params.size()];
        try (PointerScope scope = new PointerScope()) {
            sums[0] = torch.zeros_like(srcData);
            sums[1] = shared ? sums[0] : torch.zeros_like(dstData);
            // Gradients only for the parameters that need one: autograd refuses the others (frozen).
            List<Tensor> trained = new ArrayList<>();
            List<Tensor> trainedSums = new ArrayList<>();
            for (int i = 0; i < params.size(); i++) {
                if (needed[2 + i]) {
                    sums[2 + i] = torch.zeros_like(params.get(i));
                    trained.add(params.get(i));
                    trainedSums.add(sums[2 + i]);
                }
            }
            Grads into = new Grads(sums[1], trained, trainedSums);
            try (org.bytedeco.pytorch.AutoGradMode on = new org.bytedeco.pytorch.AutoGradMode(true)) {
                // The local rows' gradient goes straight into the sum (no block-sized buffer of its own).
                blockGradients(op, steps(local), srcData, sums[0], dstData, gradOut, finalState, out, into);
                Ring.refetchAndReturn(comm, TAG_REFETCH, TAG_BACKWARD,
                        p -> srcData.index_select(0, shards[p].sendRows),
                        (p, block) -> blockGradients(op, steps(shards[p].edges), block, torch.zeros_like(block), dstData, gradOut,
                                finalState, out, into),
                        (p, grad) -> {
                            try (Tensor g = grad.to(srcData.scalar_type())) {
                                sums[0].index_add_(0, shards[p].sendRows, g);
                            }
                        });
            }
            // The bridge's input hooks take (and close) the needed ones, later in this backward.
            for (int i = 0; i < sums.length; i++) {
                sums[i] = needed[i] ? Scopes.own(sums[i]) : null;
            }
        }
        return sums;
    }

    /**
     * Where the rematerialized backward adds the destinations' gradient and those of the
     * parameters that need one ({@code params[i]}'s into {@code paramSums[i]}).
     */
    private record Grads(Tensor dstSum, List<Tensor> params, List<Tensor> paramSums) {
    }

    /**
     * The rematerialized backward over one block of source rows: the block's sources once, each
     * step's surrogate and gradients (a step's temporaries go when it is done), the sources'
     * gradients added up over the steps, then one backward through {@link ShardOperator#sources}.
     * Adds the rows' gradient into {@code rowsGrad} (dense, shaped as the rows) and returns it;
     * adds the dst and parameter gradients into {@code into}.
     */
    private static Tensor blockGradients(ShardOperator op, List<Piece> steps, Tensor rows, Tensor rowsGrad, Tensor dstData,
            Tensor gradOut, List<Tensor> finalState, Tensor out, Grads into) {
        List<Tensor> params = into.params();
        try (PointerScope block = new PointerScope()) {
            Tensor rowsLeaf = rows.detach().set_requires_grad(true);
            List<Tensor> sources = op.sources(rowsLeaf);
            List<Tensor> leaves = new ArrayList<>(sources.size());
            sources.forEach(t -> leaves.add(t.detach().set_requires_grad(true)));
            Tensor[] sourceGrads = new Tensor[sources.size()];
            boolean[] isRows = new boolean[sources.size()];
            for (int i = 0; i < sources.size(); i++) {
                // The rows themselves, or all of them in another shape: their gradient is added
                // straight into the rows' (seen in the same shape), with no buffer and no backward of its own.
                isRows[i] = sameMemory(sources.get(i), rowsLeaf);
                if (isRows[i]) {
                    sourceGrads[i] = rowsGrad.view(Tensors.shape(sources.get(i)));
                }
            }
            for (Piece piece : steps) {
                try (PointerScope step = new PointerScope()) {
                    Tensor dstLeaf = piece.of(dstData).detach().set_requires_grad(true);
                    List<Tensor> wrt = new ArrayList<>(leaves);
                    wrt.add(dstLeaf);
                    wrt.addAll(params);
                    Tensor s = op.surrogate(piece.edges(), dstLeaf, leaves, piece.of(gradOut), piece.of(finalState), piece.of(out));
                    TensorVector grads = gradients(List.of(s), wrt, List.of());
                    for (int i = 0; i < leaves.size(); i++) {
                        Tensor g = grads.get(i);
                        if (!g.defined()) {
                            continue;
                        }
                        if (sourceGrads[i] == null) {
                            // Dense, in the block's scope.
                            sourceGrads[i] = Scopes.escape(step, block, g.is_sparse() ? torch.zeros_like(leaves.get(i)) : new Tensor(g));
                            if (!g.is_sparse()) {
                                continue;
                            }
                        }
                        addInto(sourceGrads[i], g);
                    }
                    addIfDefined(piece.of(into.dstSum()), grads.get(leaves.size()));
                    for (int i = 0; i < params.size(); i++) {
                        addIfDefined(into.paramSums().get(i), grads.get(leaves.size() + 1 + i));
                    }
                }
            }
            // Once per block: from the other sources back to the rows (and the parameters sources() uses).
            List<Tensor> outputs = new ArrayList<>(), outputGrads = new ArrayList<>();
            for (int i = 0; i < sources.size(); i++) {
                if (sourceGrads[i] != null && !isRows[i]) {
                    outputs.add(sources.get(i));
                    outputGrads.add(sourceGrads[i]);
                }
            }
            if (!outputs.isEmpty()) {
                List<Tensor> wrt = new ArrayList<>(List.of(rowsLeaf));
                wrt.addAll(params);
                TensorVector grads = gradients(outputs, wrt, outputGrads);
                outputGrads.forEach(Tensor::close); // before the rows' gradient is added up: one less at the peak
                addIfDefined(rowsGrad, grads.get(0));
                for (int i = 0; i < params.size(); i++) {
                    addIfDefined(into.paramSums().get(i), grads.get(1 + i));
                }
            }
            return rowsGrad;
        }
    }

    /** Whether {@code a} holds exactly the elements of {@code b}, in the same order (b itself or a reshaping view of it). */
    private static boolean sameMemory(Tensor a, Tensor b) {
        if (a == b) {
            return true;
        }
        if (!a.is_contiguous() || !b.is_contiguous() || a.numel() != b.numel()) {
            return false;
        }
        // data_ptr() is null for tensors with no elements.
        return a.numel() == 0 || a.data_ptr().address() == b.data_ptr().address();
    }

    /** {@code torch.autograd.grad}, unused inputs allowed (their entries undefined). */
    private static TensorVector gradients(List<Tensor> outputs, List<Tensor> inputs, List<Tensor> gradOutputs) {
        return torch.grad(new TensorVector(outputs.toArray(new Tensor[0])), new TensorVector(inputs.toArray(new Tensor[0])),
                new TensorVector(gradOutputs.toArray(new Tensor[0])), new org.bytedeco.pytorch.BoolOptional(false), false, true);
    }

    /**
     * {@code sum += g}; a sparse g by {@code index_add_} of its rows as they are: LibTorch's
     * dense += sparse would sort (coalesce) them first, several times slower.
     */
    private static void addInto(Tensor sum, Tensor g) {
        if (g.is_sparse() && g.sparse_dim() == 1) {
            sum.index_add_(0, g._indices().view(-1), g._values());
        } else {
            sum.add_(g);
        }
    }

    private static void addIfDefined(Tensor sum, Tensor g) {
        if (g.defined()) {
            sum.add_(g);
        }
    }

    private Csr selfLooped;

    /** The local shard with exactly one edge v→v in every row (for operators with self-loops). */
    private synchronized Csr localEdgesWithSelfLoops() {
        if (selfLooped == null) {
            Csr e = localWithoutLoops;
            long[] rp = e.rowptrArray();
            long[] col = Tensors.toLongArray(e.col());
            long[] ptr = new long[rp.length];
            long[] out = new long[col.length + (int) numLocal];
            int c = 0;
            for (int v = 0; v < numLocal; v++) {
                for (long k = rp[v]; k < rp[v + 1]; k++) {
                    out[c++] = col[(int) k];
                }
                out[c++] = v;
                ptr[v + 1] = c;
            }
            selfLooped = Csr.of(numLocal, numLocal, ptr, out, null);
        }
        return selfLooped;
    }

    // ------------------------------------------------------------------------------------------
    // Edge weights

    /**
     * The self-loop weights {@code 1/(deg+1)} ({@code deg}: in-edges other than stored self-loops)
     * as a column in x's dtype, computed once per dtype:
     * one fused multiply-add per call instead of five small ops (each costs a thread hand-off).
     */
    private Tensor selfLoopWeight(Tensor like) {
        return selfLoops.computeIfAbsent((int) like.scalar_type().value, t -> {
            try (org.bytedeco.javacpp.PointerScope s = new org.bytedeco.javacpp.PointerScope()) {
                return Scopes.own(degreeWithoutLoops.add(new Scalar(1.0)).reciprocal().unsqueeze(1).to(like.scalar_type()).contiguous());
            }
        });
    }

    /** Per-shard aggregations with the weights of {@code norm} (computed once, in float64). */
    synchronized CsrAggregation[] weights(EdgeNorm norm) {
        return weighted.computeIfAbsent(norm, k -> {
            CsrAggregation[] out = new CsrAggregation[parts];
            for (int p = 0; p < parts; p++) {
                // The aggregation takes handles of its own.
                try (Csr w = weightedShard(p, k)) {
                    out[p] = CsrAggregation.of(w);
                }
            }
            return out;
        });
    }

    /** Shard {@code p} with the weights of {@code norm}: a new matrix (handles of its own) for the caller to close. */
    private Csr weightedShard(int p, EdgeNorm norm) {
        Csr e = shards[p].edges;
        switch (norm) {
            case SUM:
                return e.withWeight(null);
            case MEAN: {
                Tensor dst = e.rowIndex();
                return e.withWeight(inDegree.clamp_min(new Scalar(1.0)).reciprocal().index_select(0, dst).contiguous());
            }
            default: {
                // GCN: stored self-loops give way to the one selfLoopWeight adds (remote shards store none).
                Csr g = p == rank ? localWithoutLoops : e;
                Tensor dv = degreeWithoutLoops.add(new Scalar(1.0)).index_select(0, g.rowIndex());
                Tensor du = shards[p].sourceDegree.add(new Scalar(1.0)).index_select(0, g.col());
                return g.withWeight(dv.mul(du).rsqrt().contiguous());
            }
        }
    }

    /** The remote shards side by side: columns follow {@link #fetchAllBoundaryRows}. */
    private synchronized CsrAggregation haloGraph(EdgeNorm norm) {
        return haloGraphs.computeIfAbsent(norm, k -> {
            List<Tensor> rows = new ArrayList<>(), cols = new ArrayList<>(), vals = new ArrayList<>();
            List<Csr> weightedShards = new ArrayList<>();
            long width = 0;
            for (int p = 0; p < parts; p++) {
                if (p == rank) {
                    continue;
                }
                Csr w = weightedShard(p, k);
                weightedShards.add(w);
                rows.add(w.rowIndex());
                cols.add(w.col().add(new Scalar(width)));
                if (w.weight() != null) {
                    vals.add(w.weight());
                }
                width += shards[p].numNeeded();
            }
            // Stable counting sort by destination row: rows stay contiguous, as CSR needs.
            long[] row = Tensors.toLongArray(cat(rows));
            long[] ptr = new long[(int) numLocal + 1];
            for (long r : row) {
                ptr[(int) r + 1]++;
            }
            for (int v = 0; v < numLocal; v++) {
                ptr[v + 1] += ptr[v];
            }
            long[] next = Arrays.copyOf(ptr, (int) numLocal);
            long[] perm = new long[row.length];
            for (int e = 0; e < row.length; e++) {
                perm[(int) next[(int) row[e]]++] = e;
            }
            Tensor order = Tensors.longs(perm);
            Tensor col = cat(cols).index_select(0, order).contiguous();
            Tensor val = vals.isEmpty() ? null : cat(vals).index_select(0, order).contiguous();
            weightedShards.forEach(Csr::close);
            try (Csr halo = Csr.of(numLocal, width, Tensors.longs(ptr), col, val)) {
                return CsrAggregation.of(halo);
            }
        });
    }

    private static Tensor cat(List<Tensor> ts) {
        return torch.cat(new TensorVector(ts.toArray(new Tensor[0])));
    }

    // ------------------------------------------------------------------------------------------

    private void checkRows(Tensor x, String op) {
        if (x.dim() != 2 || x.size(0) != numLocal) {
            throw new IllegalArgumentException(op + " on rank " + rank + ": expected features of this rank's "
                    + numLocal + " nodes as [" + numLocal + ", f], got " + Tensors.shapeString(x));
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
     * gets through this, as the blocks it waits for are ones the partners sent before they could
     * wait for it, and the job then ends through the uncaught error (tested). A program that
     * catches such an error on some ranks only and closes the manager somewhere else may wait
     * here on partners that no longer take part.
     */
    @Override
    public void close() {
        pipeline.close();
        for (Shard s : shards) {
            s.close();
        }
        weighted.values().forEach(aggs -> Arrays.stream(aggs).forEach(CsrAggregation::close));
        haloGraphs.values().forEach(CsrAggregation::close);
        selfLoops.values().forEach(Tensor::close);
        Scopes.closeAll(inDegree, degreeWithoutLoops);
        if (localWithoutLoops != shards[rank].edges) {
            localWithoutLoops.close();
        }
        closePieces();
        if (selfLooped != null) {
            selfLooped.close();
        }
        comm.close();
        LOG.debug("rank {}: shard manager closed", rank);
    }
}
