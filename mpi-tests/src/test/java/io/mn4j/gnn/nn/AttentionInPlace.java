package io.mn4j.gnn.nn;

import io.mn4j.communicator.Communicator;
import io.mn4j.gnn.shard.AggregationMode;
import io.mn4j.gnn.shard.GraphShardManager;
import io.mn4j.mpitests.Check;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/**
 * The output of {@link GraphAttention} (package-private, hence this class in its package) changed
 * in place before backward, as {@code relu_} after a custom layer would: where autograd holds the
 * graph (sequential, one-shot) the gradients are those of the same change made out of place;
 * SAR's backward, which recomputes from that output, refuses with a clear error and keeps nothing.
 */
public final class AttentionInPlace {
    private AttentionInPlace() {
    }

    public static void check(Communicator c, Check check, GraphShardManager m, long[] offsets, int heads, int channels) {
        long n = offsets[c.size()], lo = offsets[c.rank()], rows = offsets[c.rank() + 1] - lo;
        TensorOptions f64 = new TensorOptions(torch.ScalarType.Double);
        torch.manual_seed(5); // the same values on every rank
        Tensor attSrc = torch.randn(new long[] {heads, channels}, f64).set_requires_grad(true);
        Tensor attDst = torch.randn(new long[] {heads, channels}, f64).set_requires_grad(true);
        Tensor h = torch.randn(new long[] {n, heads * channels}, f64).narrow(0, lo, rows);
        Tensor r = torch.randn(new long[] {n, heads * channels}, f64).narrow(0, lo, rows);
        GraphAttention attention = new GraphAttention(heads, channels, attSrc, attDst, 0.2);
        Tensor expected = inputGradient(m, attention, h, r, false);
        if (m.mode() != AggregationMode.SAR) {
            check.tensorsClose("input gradient", expected, inputGradient(m, attention, h, r, true), 1e-9);
            return;
        }
        int before = m.liveBridges();
        check.throwsWith("SAR's backward refuses", () -> {
            try (PointerScope s = new PointerScope()) {
                inputGradient(m, attention, h, r, true);
            }
        }, "GraphAttention in SAR mode: its output was modified by an in-place operation", "relu instead of relu_");
        check.equal("hooks kept after the refused backward", before, m.liveBridges());
    }

    private static Tensor inputGradient(GraphShardManager m, GraphAttention attention, Tensor h, Tensor r, boolean inPlace) {
        Tensor x = h.clone().set_requires_grad(true);
        Tensor out = m.aggregate(x, x, attention);
        out = inPlace ? out.mul_(new Scalar(2.0)) : out.mul(new Scalar(2.0));
        out.mul(r).sum().backward();
        return x.grad();
    }
}
