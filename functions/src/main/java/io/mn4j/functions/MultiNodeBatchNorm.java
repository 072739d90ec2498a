package io.mn4j.functions;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.ReduceOp;
import io.mn4j.tensor.Tensors;
import java.util.Arrays;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.ScalarTypeOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * Batch normalization whose batch statistics are computed over the samples of all ranks, as if
 * their batches were one (ChainerMN's {@code MultiNodeBatchNormalization}). Local batches may
 * differ in size, including empty ones: every rank contributes its sample count, its sum and its
 * sum of squared deviations, so the mean and the variance are exactly those of the concatenated
 * batch. The statistics are combined with the differentiable {@link Functions#allreduce}, so the
 * backward pass is that of the global batch as well.
 *
 * <p>Input: {@code (N, C)} or {@code (N, C, ...)}; statistics per channel C over every other
 * dimension. In training, every rank must call {@link #forward} the same number of times (two
 * allreduces each, and two in backward). In evaluation ({@code train(false)}) the running
 * statistics are used and nothing is communicated. The running variance is updated with the
 * unbiased variance of the global batch, as LibTorch's BatchNorm does.
 */
public class MultiNodeBatchNorm extends Module {
    private final Communicator comm;
    private final long features;
    private final double eps;
    private final double momentum;
    private final Tensor weight;
    private final Tensor bias;
    private final Tensor runningMean;
    private final Tensor runningVar;

    /** eps 1e-5, momentum 0.1, with a learned scale and shift, float32. */
    public MultiNodeBatchNorm(Communicator comm, long numFeatures) {
        this(comm, numFeatures, 1e-5, 0.1, true, torch.ScalarType.Float);
    }

    /**
     * @param numFeatures the number of channels C
     * @param eps added to the variance
     * @param momentum weight of the current batch in the running statistics
     * @param affine whether to learn a scale ({@code weight}, ones) and shift ({@code bias}, zeros)
     * @param dtype of the parameters and buffers
     */
    public MultiNodeBatchNorm(Communicator comm, long numFeatures, double eps, double momentum, boolean affine,
            torch.ScalarType dtype) {
        if (numFeatures < 1) {
            throw new IllegalArgumentException("MultiNodeBatchNorm: numFeatures must be positive, got " + numFeatures);
        }
        this.comm = comm;
        this.features = numFeatures;
        this.eps = eps;
        this.momentum = momentum;
        TensorOptions opts = new TensorOptions(dtype);
        long[] c = {numFeatures};
        // register_* return references into the module's table, which later registrations may
        // move: keep handles of our own (same tensors).
        this.weight = affine ? new Tensor(register_parameter("weight", torch.ones(c, opts))) : null;
        this.bias = affine ? new Tensor(register_parameter("bias", torch.zeros(c, opts))) : null;
        this.runningMean = new Tensor(register_buffer("running_mean", torch.zeros(c, opts)));
        this.runningVar = new Tensor(register_buffer("running_var", torch.ones(c, opts)));
    }

    /** The learned scale, or null without affine parameters. */
    public Tensor weight() {
        return weight;
    }

    /** The learned shift, or null without affine parameters. */
    public Tensor bias() {
        return bias;
    }

    public Tensor runningMean() {
        return runningMean;
    }

    public Tensor runningVar() {
        return runningVar;
    }

    /** Normalizes {@code x} (shape {@code (N, C, ...)}) with the statistics of all ranks' batches. */
    public Tensor forward(Tensor x) {
        if (x.dim() < 2 || x.size(1) != features) {
            throw new IllegalArgumentException("MultiNodeBatchNorm: expected input (N, " + features + ", ...), got "
                    + Tensors.describe(x));
        }
        long[] view = new long[(int) x.dim()];
        Arrays.fill(view, 1);
        view[1] = features;
        long[] dims = new long[(int) x.dim() - 1];
        for (int d = 0, k = 0; d < x.dim(); d++) {
            if (d != 1) {
                dims[k++] = d;
            }
        }
        Tensor normalized;
        if (is_training()) {
            // Counts and sums travel in float64 whatever x's dtype: float16 cannot count past
            // 65504 (nor sum that many values), bfloat16 not exactly past 256.
            ScalarTypeOptional f64 = new ScalarTypeOptional(torch.ScalarType.Double);
            double localCount = x.numel() / (double) features;
            Tensor localSum = x.sum(dims, false, f64);
            Tensor count = torch.full(new long[] {1}, new Scalar(localCount), new TensorOptions(torch.ScalarType.Double));
            Tensor total = Functions.allreduce(comm, torch.cat(new TensorVector(localSum, count)), ReduceOp.SUM);
            double n = total.narrow(0, features, 1).item_double();
            if (n < 1) {
                throw new IllegalStateException("MultiNodeBatchNorm: the batches of all ranks are empty");
            }
            Tensor mean = total.narrow(0, 0, features).div(new Scalar(n)).to(x.scalar_type());
            Tensor centered = x.sub(mean.view(view));
            Tensor squares = centered.mul(centered).sum(dims, false, f64);
            Tensor var = Functions.allreduce(comm, squares, ReduceOp.SUM).div(new Scalar(n)).to(x.scalar_type());
            normalized = centered.mul(var.add(new Scalar(eps)).rsqrt().view(view));
            try (NoGradGuard noGrad = new NoGradGuard()) {
                runningMean.mul_(new Scalar(1 - momentum)).add_(mean.detach().mul(new Scalar(momentum)));
                double unbiased = n > 1 ? n / (n - 1) : 1;
                runningVar.mul_(new Scalar(1 - momentum)).add_(var.detach().mul(new Scalar(momentum * unbiased)));
            }
        } else {
            normalized = x.sub(runningMean.view(view)).mul(runningVar.add(new Scalar(eps)).rsqrt().view(view));
        }
        if (weight != null) {
            normalized = normalized.mul(weight.view(view)).add(bias.view(view));
        }
        return normalized;
    }
}
