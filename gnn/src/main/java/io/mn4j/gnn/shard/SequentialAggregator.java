package io.mn4j.gnn.shard;

import io.mn4j.functions.autograd.GradientBridge;
import io.mn4j.gnn.graph.Csr;
import io.mn4j.gnn.kernel.CsrAggregation;
import io.mn4j.tensor.Scopes;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.GradMode;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * SEQUENTIAL (SAR's {@code disable_sr}): SAR's ring with every fetched block kept in the autograd
 * graph, so backward recomputes nothing. Without a graph to keep (no autograd, or sources that
 * need no gradient) it is SAR itself.
 */
final class SequentialAggregator implements Aggregator {
    private final ShardResources resources;
    private final ShardLayout layout;
    private final SarAggregator sar;

    SequentialAggregator(ShardResources resources) {
        this.resources = resources;
        this.layout = resources.layout();
        this.sar = new SarAggregator(resources);
    }

    @Override
    public Tensor aggregate(Tensor x, EdgeNorm norm) {
        if (!(x.requires_grad() && GradMode.is_enabled())) {
            return sar.aggregate(x, norm);
        }
        Tensor local = resources.weights().localSum(x, norm);
        return layout.parts() == 1 ? local : local.add(remoteSum(x, norm));
    }

    /** The fetched blocks' weighted sums, each block in the autograd graph. */
    private Tensor remoteSum(Tensor x, EdgeNorm norm) {
        CsrAggregation[] w = resources.weights().shards(norm, x);
        Tensor data = x.detach().contiguous();
        GradientBridge bridge = new GradientBridge(resources.bridges(), x);
        Tensor[] blockGrads = new Tensor[layout.parts()];
        Tensor[] acc = {null};
        PointerScope callScope = PointerScope.getInnerScope();
        resources.ring().fetch(data, (p, block) -> {
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

    /** Sources that need no gradient leave no graph to keep: SAR then bridges whatever does (dst, parameters). */
    @Override
    public Tensor aggregate(Tensor dst, Tensor src, ShardOperator op) {
        if (!(src.requires_grad() && GradMode.is_enabled())) {
            return sar.aggregate(dst, src, op);
        }
        Csr local = resources.weights().localShard(op);
        GradientBridge bridge = new GradientBridge(resources.bridges(), src);
        Tensor data = src.detach().contiguous();
        Tensor[] blockGrads = new Tensor[layout.parts()];
        PointerScope callScope = PointerScope.getInnerScope();
        List<List<Tensor>> state = new ArrayList<>(1);
        NodeNumbering ids = resources.numbering().get();
        state.add(ShardSteps.nextState(callScope, null, () -> op.shard(local, ids.localEnds(), dst, op.sources(src))));
        resources.ring().fetch(data, (p, block) -> state.set(0, ShardSteps.nextState(callScope, state.get(0), () -> {
            Tensor fetched = bridge.attach(block);
            bridge.onGrad(fetched, g -> blockGrads[p] = g);
            return op.combine(state.get(0), op.shard(layout.shard(p).edges, ids.remoteEnds(p), dst, op.sources(fetched)));
        })));
        bridge.onInputGrad(0, g -> pushAndRelease(g, blockGrads));
        return op.finish(state.get(0));
    }

    /** The extra input gradient: the fetched blocks' gradients pushed home, each released once sent. */
    private Tensor pushAndRelease(Tensor like, Tensor[] blockGrads) {
        try {
            Tensor extra = torch.zeros_like(like);
            resources.ring().pushGradients(extra, p -> {
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
}
