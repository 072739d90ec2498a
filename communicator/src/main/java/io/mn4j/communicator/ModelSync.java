package io.mn4j.communicator;

import java.util.function.Consumer;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * The tensors of a LibTorch {@link Module} that data-parallel training keeps alike on every rank,
 * handed to a collective that the caller picks ({@link Communicator#bcastData},
 * {@link Communicator#meanGrad}, {@link Communicator#sumGrad}). Parameters are visited in the
 * module's registration order, which is the same on every rank that built the same model.
 */
final class ModelSync {
    private ModelSync() {
    }

    /** Passes every parameter, then every buffer, of {@code module} to {@code collective}, without autograd. */
    static void forEachParameterAndBuffer(Module module, Consumer<Tensor> collective) {
        TensorVector params = module.parameters(true);
        TensorVector buffers = module.buffers(true);
        try (NoGradGuard noGrad = new NoGradGuard()) {
            for (long i = 0; i < params.size(); i++) {
                collective.accept(params.get(i));
            }
            for (long i = 0; i < buffers.size(); i++) {
                collective.accept(buffers.get(i));
            }
        }
    }

    /**
     * Replaces every parameter's gradient by what {@code reduceInPlace} makes of all gradients
     * flattened into one tensor (one collective, and no second model-sized buffer). A parameter
     * without a gradient counts as zeros and gets one.
     */
    static void reduceGradients(Module module, Consumer<Tensor> reduceInPlace) {
        TensorVector params = module.parameters(true);
        int n = (int) params.size();
        if (n == 0) {
            return;
        }
        Tensor[] grads = new Tensor[n];
        try (NoGradGuard noGrad = new NoGradGuard()) {
            for (int i = 0; i < n; i++) {
                Tensor p = params.get(i);
                Tensor g = p.grad();
                grads[i] = g.defined() ? g.reshape(-1) : torch.zeros_like(p).reshape(-1);
            }
            Tensor reduced = torch.cat(new TensorVector(grads));
            reduceInPlace.accept(reduced);
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
