package io.mn4j.communicator;

import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * An all-reduce (sum) whose messages carry 16-bit floats: a reduce-scatter (an alltoall of
 * blocks, each block summed in float32 by the rank that owns it) and an allgather of the summed
 * blocks. Every element is rounded to the wire dtype twice: once before it travels, once after it
 * was summed. MPI's own reductions cannot do this: the Java bindings have no 16-bit float type, so
 * {@link Reductions} widens such tensors to float32, doubling the bytes this exists to halve.
 */
final class LowPrecisionSum {
    private LowPrecisionSum() {
    }

    /**
     * Replaces the 1-d floating-point tensor {@code flat} on every rank of {@code comm} by
     * {@code scale} times the sum over the ranks, with the messages in {@code wire}. Collective;
     * every rank passes the same numel, wire dtype and scale.
     */
    static void allreduceInPlace(Communicator comm, Tensor flat, ScalarType wire, double scale) {
        int p = comm.size();
        long n = flat.numel();
        long block = (n + p - 1) / p;
        try (PointerScope scope = new PointerScope()) {
            // Scaled before rounding, so a mean's terms stay in float16's range.
            Tensor low = torch.zeros(new long[] {p * block}, new TensorOptions(wire));
            low.narrow(0, 0, n).copy_(scale == 1 ? flat : flat.mul(new Scalar(scale)));
            Tensor mine = torch.empty_like(low);
            comm.alltoallInto(low, mine);
            Tensor summed = mine.view(p, block).to(ScalarType.Float).sum(0).to(wire);
            comm.allgatherInto(summed, low);
            flat.copy_(low.narrow(0, 0, n));
        }
    }
}
