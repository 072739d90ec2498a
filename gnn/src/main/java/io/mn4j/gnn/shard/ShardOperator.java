package io.mn4j.gnn.shard;

import io.mn4j.gnn.graph.Csr;
import java.util.List;
import org.bytedeco.pytorch.Tensor;

/**
 * A neighbourhood aggregation that the {@link GraphShardManager} runs shard by shard, for layers
 * that are not plain weighted sums (attention, edge-conditioned messages, ...).
 *
 * <p>Each block of source rows (this rank's own, or one fetched from a partner) is first turned
 * into the operator's {@link #sources} once; then for each shard, or each range of a shard's rows
 * (a <i>step</i>), the manager calls {@link #shard} with the step's edges (rows: the step's
 * destination nodes; columns: rows of the block), the destination inputs {@code dst} of those
 * nodes and the block's sources; the states of all steps are merged with {@link #combine} (any
 * order, associative) and turned into the output by {@link #finish}. In SAR mode the forward runs
 * without autograd and backward recomputes one step at a time: {@link #surrogate} must return a
 * scalar whose gradient with respect to {@code dst}, the sources and {@link #parameters()} is the
 * step's share of the true gradient, given the output's gradient and the final (merged) state.
 * The manager adds up a block's source gradients over its steps (they may be sparse) and
 * backpropagates through {@link #sources} once per block, so that what a step costs follows its
 * edges, not the size of the block.
 */
public interface ShardOperator {
    /**
     * What the steps read of a block of source rows [rows, features], computed once per block:
     * for example per-row attention logits, or the rows laid out as the steps index them.
     * Differentiable in {@code src} and the parameters. Default: the rows themselves. In SAR
     * mode's backward, the gradient of a source that is {@code src} itself or a view of all of it
     * in another shape is added straight into the rows' gradient, with no buffer of its own.
     */
    default List<Tensor> sources(Tensor src) {
        return List.of(src);
    }

    /**
     * The state of one step's edges: tensors with one row per destination node of the step.
     * {@code ends} gives the ids of the edges' ends, for operators that key random choices (attention
     * dropout) by them.
     */
    List<Tensor> shard(Csr edges, EdgeEnds ends, Tensor dst, List<Tensor> sources);

    /** Merges two shard states. */
    List<Tensor> combine(List<Tensor> a, List<Tensor> b);

    /** The aggregated output [nodes, features] from the merged state. */
    Tensor finish(List<Tensor> state);

    /**
     * A scalar whose gradient is this step's contribution to {@code Σ gradOut·out}, with
     * {@code finalState} and {@code out} (both without autograd) held constant. Its gradients
     * with respect to the sources may be sparse (for example from {@code embedding_bag} with
     * {@code sparse=true}): a step then costs what its edges cost.
     */
    Tensor surrogate(Csr edges, EdgeEnds ends, Tensor dst, List<Tensor> sources, Tensor gradOut, List<Tensor> finalState, Tensor out);

    /**
     * The entries of the final state that {@link #surrogate} reads, at the same positions (others
     * may be null). In SAR mode the manager keeps only these from forward to backward, so an
     * operator whose state holds large tensors the surrogate does not need (for example a weighted
     * sum that {@link #finish} has already turned into the output) should leave them out. Default:
     * the whole state.
     */
    default List<Tensor> stateForBackward(List<Tensor> finalState) {
        return finalState;
    }

    /** Parameters used in {@link #sources} and {@link #shard}; in SAR mode the manager delivers their gradients. */
    List<Tensor> parameters();

    /**
     * Whether every node also receives from itself: the local shard then has exactly one self-loop
     * per node, stored self-loops replaced (PyG's GATConv removes, then adds them).
     */
    default boolean selfLoops() {
        return false;
    }
}
