package io.mn4j.gnn.shard;

import io.mn4j.functions.autograd.GradientBridge;
import io.mn4j.gnn.graph.Csr;
import io.mn4j.tensor.Scopes;
import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AutoGradMode;
import org.bytedeco.pytorch.BoolOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * SAR's backward of one {@link ShardOperator} aggregation: recomputes each block's steps under
 * autograd (the local block, then the remote ones fetched again in the ring), takes the gradients
 * of their surrogates, keeps the local parts and sends the fetched rows' gradients to their owners.
 */
final class Rematerialization {
    private final ShardLayout layout;
    private final ShardSteps steps;
    private final Ring ring;
    private final ShardOperator op;
    private final Csr local;
    /** The forward's ids: the surrogates draw the same random choices (attention dropout) as the forward did. */
    private final NodeNumbering ids;
    /** Handles of their own on what backward reads: the forward's scopes are gone by then. */
    private final List<Tensor> finalState = new ArrayList<>();
    private final Tensor dst;
    private final Tensor src;
    /** A detached view of the result: the same values, so that {@code out} itself can go with the forward. */
    private final Tensor out;
    private final long outVersion;
    /** Which of src, dst and the parameters (in that order) need a gradient. */
    private final boolean[] needed;
    /** Whether src and dst are one tensor (its gradient then goes into src's). */
    private final boolean shared;

    /** Where the steps add the destinations' gradient and those of the parameters that are trained. */
    private record GradientSums(Tensor dst, List<Tensor> trained, List<Tensor> trainedSums) {
    }

    Rematerialization(ShardResources resources, ShardOperator op, Csr local, NodeNumbering ids, List<Tensor> stateForBackward,
            Tensor dstData, Tensor srcData, Tensor result, boolean[] needed, boolean shared) {
        this.layout = resources.layout();
        this.steps = resources.steps();
        this.ring = resources.ring();
        this.op = op;
        this.local = local;
        this.ids = ids;
        for (Tensor t : stateForBackward) {
            finalState.add(t == null ? null : Scopes.own(t));
        }
        this.dst = Scopes.own(dstData);
        this.src = Scopes.own(srcData);
        this.out = Scopes.own(result.detach());
        this.needed = needed;
        this.shared = shared;
        // A detached view shares the version counter with the result.
        this.outVersion = out._version();
    }

    /** Hands what backward reads to {@code bridge}, which closes it when no backward can come any more. */
    void keepIn(GradientBridge bridge) {
        bridge.keep(dst, src, out);
        bridge.keep(finalState.toArray(new Tensor[0]));
    }

    /**
     * The extra gradients of src, dst (folded into src when they are one tensor) and each
     * parameter, in that order; null where none is needed.
     *
     * @throws IllegalStateException if the output was changed in place since the forward: the
     *     surrogates read it, and autograd cannot see the change
     */
    Tensor[] gradients(Tensor gradOut) {
        if (out._version() != outVersion) {
            throw new IllegalStateException(op.getClass().getSimpleName() + " in SAR mode: its output was modified"
                    + " by an in-place operation after the forward (version " + out._version() + ", expected "
                    + outVersion + "); its backward recomputes from that output. Use the out-of-place operation"
                    + " (e.g. relu instead of relu_) on it, or AggregationMode.SEQUENTIAL.");
        }
        List<Tensor> params = op.parameters();
        Tensor[] sums = new Tensor[2 + params.size()];
        try (PointerScope scope = new PointerScope()) {
            sums[0] = torch.zeros_like(src);
            sums[1] = shared ? sums[0] : torch.zeros_like(dst);
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
            GradientSums into = new GradientSums(sums[1], trained, trainedSums);
            try (AutoGradMode on = new AutoGradMode(true)) {
                // The local rows' gradient goes straight into the sum (no block-sized buffer of its own).
                blockGradients(steps.of(local), ids.localEnds(), src, sums[0], gradOut, into);
                ring.refetchAndReturn(src, (p, block) -> blockGradients(steps.of(layout.shard(p).edges), ids.remoteEnds(p), block,
                        torch.zeros_like(block), gradOut, into), sums[0]);
            }
            // The bridge's input hooks take (and close) the needed ones, later in this backward.
            for (int i = 0; i < sums.length; i++) {
                sums[i] = needed[i] ? Scopes.own(sums[i]) : null;
            }
        }
        return sums;
    }

    /**
     * The backward over one block of source rows: the block's sources once, each step's surrogate
     * and gradients (a step's temporaries go when it is done), then one backward through
     * {@link ShardOperator#sources}. Adds the rows' gradient into {@code rowsGrad} (dense, shaped
     * as the rows) and returns it; adds the dst and parameter gradients into {@code into}.
     */
    private Tensor blockGradients(List<RowRange> blockSteps, EdgeEnds ends, Tensor rows, Tensor rowsGrad, Tensor gradOut,
            GradientSums into) {
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
            for (RowRange range : blockSteps) {
                stepGradients(block, range, ends.fromRow(range.from()), leaves, sourceGrads, gradOut, into);
            }
            backThroughSources(rowsLeaf, sources, sourceGrads, isRows, rowsGrad, into);
            return rowsGrad;
        }
    }

    /** One step's surrogate and its gradients, added into {@code sourceGrads} (made in {@code block} when first needed) and {@code into}. */
    private void stepGradients(PointerScope block, RowRange range, EdgeEnds ends, List<Tensor> leaves, Tensor[] sourceGrads,
            Tensor gradOut, GradientSums into) {
        try (PointerScope step = new PointerScope()) {
            Tensor dstLeaf = range.narrow(dst).detach().set_requires_grad(true);
            List<Tensor> wrt = new ArrayList<>(leaves);
            wrt.add(dstLeaf);
            wrt.addAll(into.trained());
            Tensor s = op.surrogate(range.edges(), ends, dstLeaf, leaves, range.narrow(gradOut), range.narrow(finalState), range.narrow(out));
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
            addIfDefined(range.narrow(into.dst()), grads.get(leaves.size()));
            for (int i = 0; i < into.trained().size(); i++) {
                addIfDefined(into.trainedSums().get(i), grads.get(leaves.size() + 1 + i));
            }
        }
    }

    /** Once per block: from the sources other than the rows back to the rows (and the parameters sources() uses). */
    private void backThroughSources(Tensor rowsLeaf, List<Tensor> sources, Tensor[] sourceGrads, boolean[] isRows, Tensor rowsGrad,
            GradientSums into) {
        List<Tensor> outputs = new ArrayList<>(), outputGrads = new ArrayList<>();
        for (int i = 0; i < sources.size(); i++) {
            if (sourceGrads[i] != null && !isRows[i]) {
                outputs.add(sources.get(i));
                outputGrads.add(sourceGrads[i]);
            }
        }
        if (outputs.isEmpty()) {
            return;
        }
        List<Tensor> wrt = new ArrayList<>(List.of(rowsLeaf));
        wrt.addAll(into.trained());
        TensorVector grads = gradients(outputs, wrt, outputGrads);
        outputGrads.forEach(Tensor::close); // before the rows' gradient is added up: one less at the peak
        addIfDefined(rowsGrad, grads.get(0));
        for (int i = 0; i < into.trained().size(); i++) {
            addIfDefined(into.trainedSums().get(i), grads.get(1 + i));
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
                new TensorVector(gradOutputs.toArray(new Tensor[0])), new BoolOptional(false), false, true);
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
}
