package io.mn4j.communicator;

import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * Data-parallel helpers on a LibTorch {@link Module}: the same initial parameters on every rank,
 * and gradients averaged (or summed) across ranks. Parameters are visited in the module's registration order,
 * which is the same on every rank that built the same model.
 */
public final class ModelSync {
    private ModelSync() {
    }

    /** Broadcasts every parameter and buffer of {@code module} from {@code root}, in place. */
    public static void bcastData(Communicator comm, Module module, int root) {
        TensorVector params = module.parameters(true);
        TensorVector buffers = module.buffers(true);
        try (var noGrad = new org.bytedeco.pytorch.NoGradGuard()) {
            for (long i = 0; i < params.size(); i++) {
                comm.bcastInto(params.get(i), root);
            }
            for (long i = 0; i < buffers.size(); i++) {
                comm.bcastInto(buffers.get(i), root);
            }
        }
    }

    /**
     * Replaces every parameter's gradient by its mean over the ranks, with one allreduce of all
     * gradients flattened together. A parameter without a gradient counts as zeros and gets one.
     */
    public static void meanGrad(Communicator comm, Module module) {
        reduceGrad(comm, module, ReduceOp.MEAN);
    }

    /**
     * Replaces every parameter's gradient by its sum over the ranks (each rank's gradient is of its
     * share of a loss), as {@link #meanGrad} does the mean.
     */
    public static void sumGrad(Communicator comm, Module module) {
        reduceGrad(comm, module, ReduceOp.SUM);
    }

    private static void reduceGrad(Communicator comm, Module module, ReduceOp op) {
        TensorVector params = module.parameters(true);
        int n = (int) params.size();
        if (n == 0) {
            return;
        }
        Tensor[] grads = new Tensor[n];
        try (var noGrad = new org.bytedeco.pytorch.NoGradGuard()) {
            for (int i = 0; i < n; i++) {
                Tensor p = params.get(i);
                Tensor g = p.grad();
                grads[i] = g.defined() ? g.reshape(-1) : torch.zeros_like(p).reshape(-1);
            }
            Tensor reduced = torch.cat(new TensorVector(grads));
            comm.allreduceInto(reduced, reduced, op); // in place: no second model-sized buffer
            long offset = 0;
            for (int i = 0; i < n; i++) {
                Tensor p = params.get(i);
                long numel = p.numel();
                Tensor part = reduced.narrow(0, offset, numel).view(p.sizes());
                offset += numel;
                Tensor g = p.grad();
                if (g.defined()) {
                    g.copy_(part);
                } else {
                    // The flat buffer has the promoted dtype of all gradients (float64 if any is).
                    p.mutable_grad().put(part.to(p.scalar_type()).clone());
                }
            }
        }
    }
}
