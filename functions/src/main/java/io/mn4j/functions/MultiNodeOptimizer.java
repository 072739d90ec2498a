package io.mn4j.functions;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.GradReduction;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.Tensor;

/**
 * Data-parallel training with any LibTorch optimizer, in the style of ChainerMN's
 * {@code create_multi_node_optimizer}: every rank computes gradients on its own part of the
 * batch, {@link #step()} replaces them by their mean over the communicator and then lets the
 * wrapped optimizer update the parameters. Before the first update the parameters (and buffers)
 * of rank 0 are broadcast, so every rank starts from, and stays at, the same values.
 *
 * <p>Unlike ChainerMN, whose first {@code update()} only broadcasts, the first {@link #step()}
 * broadcasts and then updates. Gradients of that first step were computed with each rank's own
 * initial parameters: call {@link #syncParameters()} before the first forward pass (or build
 * identical models everywhere) if they must match a one-process run from the first step on.
 *
 * <p>Parameters are those of the model, in its registration order; a parameter without a
 * gradient on some rank counts as zeros there. The mean is one allreduce of all gradients
 * flattened together, flat by default; a {@link GradReduction} picks hierarchical reduction or
 * 16-bit gradients between nodes (ChainerMN's hierarchical communicator and
 * {@code allreduce_grad_dtype}). All ranks must call {@link #step()} the same number of times.
 */
public final class MultiNodeOptimizer {
    private final Optimizer actual;
    private final Module model;
    private final Communicator comm;
    private final GradReduction reduction;
    private boolean synced;

    /**
     * @param actual the optimizer to wrap (built over {@code model}'s parameters)
     * @param model the model whose parameters are broadcast and whose gradients are averaged
     * @param comm the ranks that train together
     */
    public MultiNodeOptimizer(Optimizer actual, Module model, Communicator comm) {
        this(actual, model, comm, GradReduction.flat());
    }

    /**
     * @param actual the optimizer to wrap (built over {@code model}'s parameters)
     * @param model the model whose parameters are broadcast and whose gradients are averaged
     * @param comm the ranks that train together
     * @param reduction how the gradients are averaged (the same on every rank)
     */
    public MultiNodeOptimizer(Optimizer actual, Module model, Communicator comm, GradReduction reduction) {
        if (actual == null || model == null || comm == null || reduction == null) {
            throw new IllegalArgumentException("MultiNodeOptimizer: optimizer, model, communicator and reduction are required");
        }
        this.actual = actual;
        this.model = model;
        this.comm = comm;
        this.reduction = reduction;
    }

    /** The wrapped optimizer. */
    public Optimizer actual() {
        return actual;
    }

    /** True once the parameters have been broadcast from rank 0. */
    public boolean synced() {
        return synced;
    }

    /**
     * Broadcasts rank 0's parameters and buffers to every rank now (collective). Called by the
     * first {@link #step()} if not called before.
     */
    public void syncParameters() {
        comm.bcastData(model, 0);
        synced = true;
    }

    /** Sets the gradients to none, as the wrapped optimizer's {@code zero_grad()}. */
    public void zeroGrad() {
        actual.zero_grad();
    }

    /**
     * Waits for this communicator's differentiable sends still in flight (they may read
     * parameters), broadcasts the parameters if this is the first step, replaces every gradient by
     * its mean over the ranks and runs the wrapped optimizer's step. Collective.
     */
    public void step() {
        Functions.flush(comm);
        if (!synced) {
            syncParameters();
        }
        comm.meanGrad(model, reduction);
        Tensor unused = actual.step();
        if (unused != null) {
            unused.close();
        }
    }
}
