package io.mn4j.gnn.shard;

import io.mn4j.functions.autograd.CustomFunction;
import io.mn4j.functions.autograd.GradientBridge;
import io.mn4j.gnn.graph.Csr;
import io.mn4j.gnn.kernel.CsrAggregation;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.GradMode;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/**
 * SAR: forward without autograd, one remote block at a time in the ring, each freed once added.
 * Backward sends {@code A_jᵀ·g} home for weighted sums (no fetch again) and recomputes shard by
 * shard for a {@link ShardOperator} ({@link Rematerialization}).
 */
final class SarAggregator implements Aggregator {
    private final ShardResources resources;
    private final ShardLayout layout;
    private final EdgeWeights weights;

    SarAggregator(ShardResources resources) {
        this.resources = resources;
        this.layout = resources.layout();
        this.weights = resources.weights();
    }

    @Override
    public Tensor aggregate(Tensor x, EdgeNorm norm) {
        if (layout.parts() == 1) {
            return weights.localSum(x, norm);
        }
        return ringSum(x, norm, x.requires_grad() && GradMode.is_enabled());
    }

    /**
     * The local block, self-loops included, and every fetched block added into one output buffer
     * without autograd. Backward computes the local gradient into one buffer, sends {@code A_jᵀ·g}
     * home and adds what comes back into it: no second input-sized buffer.
     */
    private Tensor ringSum(Tensor x, EdgeNorm norm, boolean withGraph) {
        CsrAggregation[] w = weights.shards(norm, x);
        int rank = layout.rank();
        Tensor data = x.detach().contiguous();
        Tensor selfWeight = norm == EdgeNorm.GCN ? weights.selfLoopWeight(x) : null;
        Tensor acc;
        try (NoGradGuard g = new NoGradGuard()) {
            acc = w[rank].forward(data);
            if (selfWeight != null) {
                acc.addcmul_(data, selfWeight);
            }
            resources.ring().fetch(data, (p, block) -> {
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
        long numLocal = layout.numLocal();
        return CustomFunction.apply("SAR sum", List.of(x), List.of(acc), grads -> {
            // An unused output still takes part in the exchange (with zeros).
            Tensor g = grads.get(0) != null ? grads.get(0) : torch.zeros(new long[] {numLocal, width}, new TensorOptions(type));
            // Grad mode is on here only under create_graph: the local part stays differentiable.
            boolean differentiable = GradMode.is_enabled();
            Tensor grad = differentiable ? w[rank].transpose().apply(g) : w[rank].transposeForward(g);
            if (selfWeight != null) {
                grad = differentiable ? grad.addcmul(g, selfWeight) : grad.addcmul_(g, selfWeight);
            }
            Tensor into = differentiable ? torch.zeros_like(grad) : grad;
            resources.ring().pushGradients(into, p -> w[p].transposeForward(g));
            return List.of(differentiable ? grad.add(into) : grad);
        }, CustomFunction.Schedule.NATURAL, resources.owner()).outputs().get(0);
    }

    /** Forward without autograd over every block; under grad mode, a backward that rematerializes. */
    @Override
    public Tensor aggregate(Tensor dst, Tensor src, ShardOperator op) {
        Csr local = weights.localShard(op);
        ShardSteps steps = resources.steps();
        PointerScope callScope = PointerScope.getInnerScope();
        Tensor dstData = dst.detach();
        Tensor srcData = src.detach().contiguous();
        List<List<Tensor>> state = new ArrayList<>(1);
        NodeNumbering ids = resources.numbering().get();
        Tensor out;
        try (NoGradGuard g = new NoGradGuard()) {
            steps.accumulate(callScope, state, op, local, ids.localEnds(), dstData, srcData);
            resources.ring().fetch(srcData, (p, block) -> steps.accumulate(callScope, state, op, layout.shard(p).edges, ids.remoteEnds(p),
                    dstData, block));
            out = op.finish(state.get(0));
        }
        if (!GradMode.is_enabled()) {
            return out;
        }
        return withBackward(out, state.get(0), op, local, ids, dst, src, dstData, srcData);
    }

    /**
     * {@code out} joined by a bridge to the inputs backward must reach (src, dst and the
     * operator's parameters that need gradients), whose gradients {@link Rematerialization} computes.
     */
    private Tensor withBackward(Tensor out, List<Tensor> state, ShardOperator op, Csr local, NodeNumbering ids, Tensor dst,
            Tensor src, Tensor dstData, Tensor srcData) {
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
        GradientBridge bridge = new GradientBridge(resources.bridges(), bridged.toArray(new Tensor[0]));
        Tensor result = bridge.attach(out);
        Tensor[][] extras = new Tensor[1][];
        Rematerialization backward = new Rematerialization(resources, op, local, ids, op.stateForBackward(state), dstData, srcData,
                result, needed, shared);
        backward.keepIn(bridge);
        bridge.onGrad(result, g -> {
            try {
                extras[0] = backward.gradients(g);
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
}
