package io.mn4j.gnn.shard;

import io.mn4j.functions.autograd.CustomFunction;
import io.mn4j.tensor.Scopes;
import io.mn4j.tensor.Tensors;
import java.util.List;
import java.util.function.UnaryOperator;
import org.bytedeco.pytorch.GradMode;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/**
 * PIPELINED (PipeGCN): ONE_SHOT's aggregation, except that training passes read the boundary rows
 * and gradients partners sent in an earlier epoch while this epoch's travel, so communication
 * overlaps computation; other passes read fresh rows, as ONE_SHOT does.
 */
final class PipelinedAggregator implements Aggregator {
    private final ShardResources resources;
    private final ShardLayout layout;
    private final HaloExchange halo;

    PipelinedAggregator(ShardResources resources) {
        this.resources = resources;
        this.layout = resources.layout();
        this.halo = new HaloExchange(layout, resources.weights(), resources.numbering());
    }

    @Override
    public Tensor aggregate(Tensor x, EdgeNorm norm) {
        return halo.sum(x, norm, boundaryRows(x));
    }

    @Override
    public Tensor aggregate(Tensor dst, Tensor src, ShardOperator op) {
        return halo.apply(dst, src, op, boundaryRows(src));
    }

    /**
     * Stale rows for a training pass, {@code x} in autograd's graph (an input that needs no
     * gradient, like a first layer's raw features, takes no part in the pipeline); fresh ones
     * otherwise. Checked on one rank too, where nothing is read, so that a program missing
     * {@code nextEpoch()} fails at once.
     */
    private UnaryOperator<Tensor> boundaryRows(Tensor x) {
        if (x.requires_grad() && GradMode.is_enabled()) {
            resources.pipeline().get().requireEpoch();
            return this::staleRows;
        }
        return halo::freshRows;
    }

    /**
     * What every partner sent in the previous epoch's matching aggregation, while this epoch's
     * rows of {@code x} go out to be read in the next; in backward the same holds for their
     * gradients. The first epoch exchanges and waits, so it is exact. Each forward's backward must
     * run once, before the next epoch's forward of the same aggregation.
     */
    private Tensor staleRows(Tensor x) {
        // The backward belongs to this pipeline, even if mode() has started another since.
        Pipeline pipe = resources.pipeline().get();
        Pipeline.Slot slot = pipe.nextForward();
        Tensor data = x.detach();
        Tensor[] rows = new Tensor[layout.parts()];
        for (int p = 0; p < layout.parts(); p++) {
            if (p != layout.rank()) {
                rows[p] = data.index_select(0, layout.shard(p).sendRows);
            }
        }
        pipe.settle();
        Tensor[] got = slot.rows().exchange(rows);
        Tensor received;
        try {
            received = layout.catPartners(p -> got[p]);
        } finally {
            Scopes.closeAll(got);
        }
        long width = x.size(1);
        torch.ScalarType type = Tensors.type(x);
        String name = "pipelined aggregation " + slot.index();
        return CustomFunction.apply(name, List.of(x), List.of(received), grads -> {
            // Grad mode is on inside the backward pass only under create_graph.
            if (GradMode.is_enabled()) {
                throw new UnsupportedOperationException(name + ": backward with create_graph=true is not supported in PIPELINED "
                        + "mode: the gradients received from other ranks carry no history");
            }
            return List.of(staleGradients(pipe, slot, grads.get(0), width, type));
        }, CustomFunction.Schedule.NATURAL, resources.owner(), "in PIPELINED mode each forward's gradients are exchanged once (the "
                + "partners pair them with their own); run the forward again").outputs().get(0);
    }

    /**
     * Sends the gradients {@code g} of the rows read (null: zeros) home and returns the gradient
     * of this rank's rows from what the partners sent in the previous epoch.
     */
    private Tensor staleGradients(Pipeline pipe, Pipeline.Slot slot, Tensor g, long width, torch.ScalarType type) {
        Tensor[] back = new Tensor[layout.parts()];
        long offset = 0;
        for (int p = 0; p < layout.parts(); p++) {
            if (p != layout.rank()) {
                long n = layout.shard(p).numNeeded();
                back[p] = g != null ? g.narrow(0, offset, n) : torch.zeros(new long[] {n, width}, new TensorOptions(type));
                offset += n;
            }
        }
        pipe.settle();
        pipe.backward();
        Tensor[] stale = slot.gradients().exchange(back);
        try {
            Tensor into = torch.zeros(new long[] {layout.numLocal(), width}, new TensorOptions(type));
            for (int p = 0; p < layout.parts(); p++) {
                if (p != layout.rank()) {
                    layout.addRowGradients(into, p, stale[p]);
                }
            }
            return into;
        } finally {
            Scopes.closeAll(stale);
        }
    }
}
