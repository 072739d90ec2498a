package io.mn4j.gnn.dist;

import io.mn4j.gnn.graph.Csr;
import java.util.List;
import org.bytedeco.pytorch.Tensor;

/**
 * A neighbourhood aggregation that the {@link GraphShardManager} runs shard by shard, for layers
 * that are not plain weighted sums (attention, edge-conditioned messages, ...).
 *
 * <p>For each shard the manager calls {@link #shard} with the shard's edges (rows: this rank's
 * nodes; columns: rows of {@code src}), the destination inputs {@code dst} of this rank's nodes and
 * the source rows {@code src}; the states of all shards are merged with {@link #combine} (any
 * order, associative) and turned into the output by {@link #finish}. In SAR mode the forward runs
 * without autograd and backward recomputes one shard at a time: {@link #surrogate} must return a
 * scalar whose gradient with respect to {@code dst}, {@code src} and {@link #parameters()} is the
 * shard's share of the true gradient, given the output's gradient and the final (merged) state.
 */
public interface ShardOperator {
    /** The state of one shard's edges: tensors with one row per destination node. */
    List<Tensor> shard(Csr edges, Tensor dst, Tensor src);

    /** Merges two shard states. */
    List<Tensor> combine(List<Tensor> a, List<Tensor> b);

    /** The aggregated output [nodes, features] from the merged state. */
    Tensor finish(List<Tensor> state);

    /**
     * A scalar whose gradient is this shard's contribution to {@code Σ gradOut·out}, with
     * {@code finalState} and {@code out} (both without autograd) held constant.
     */
    Tensor surrogate(Csr edges, Tensor dst, Tensor src, Tensor gradOut, List<Tensor> finalState, Tensor out);

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

    /** Parameters used inside {@link #shard}; in SAR mode the manager delivers their gradients. */
    List<Tensor> parameters();

    /** Whether every node also receives from itself (a self-loop added to the local shard). */
    default boolean selfLoops() {
        return false;
    }
}
