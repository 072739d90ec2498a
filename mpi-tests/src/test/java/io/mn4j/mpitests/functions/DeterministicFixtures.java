package io.mn4j.mpitests.functions;

import io.mn4j.mpitests.Check;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/**
 * Deterministic float64 data and small layers for the function tests: every rank can build every
 * rank's values (and so the one-process reference) without communicating.
 */
final class DeterministicFixtures {
    static final TensorOptions F64 = new TensorOptions(torch.ScalarType.Double);
    static final double TOL = 1e-6;

    private DeterministicFixtures() {
    }

    /** A tensor of the given shape whose values depend only on {@code seed}: sin(0.7 seed + 1.3 i) / 2. */
    static Tensor det(long seed, long... shape) {
        long n = 1;
        for (long s : shape) {
            n *= s;
        }
        return torch.arange(new Scalar(n), F64).mul(new Scalar(1.3)).add(new Scalar(0.7 * seed)).sin()
                .mul(new Scalar(0.5)).reshape(shape);
    }

    /** The gradient of a leaf, or zeros of its shape when it has none. */
    static Tensor grad(Tensor leaf) {
        Tensor g = leaf.grad();
        return g.defined() ? g : torch.zeros_like(leaf);
    }

    /** A linear layer y = x W^T + b (optionally followed by tanh) with deterministic parameters. */
    static final class Lin {
        final Tensor w;
        final Tensor b;
        final boolean tanh;

        Lin(long seed, long in, long out, boolean tanh) {
            this.w = det(seed, out, in).mul(new Scalar(0.6)).requires_grad_(true);
            this.b = det(seed + 7777, out).mul(new Scalar(0.2)).requires_grad_(true);
            this.tanh = tanh;
        }

        Tensor apply(Tensor x) {
            Tensor y = torch.linear(x, w, b);
            return tanh ? torch.tanh(y) : y;
        }

        void zeroGrad() {
            w.mutable_grad().put(new Tensor());
            b.mutable_grad().put(new Tensor());
        }
    }

    /** Named layers created on first use, the same values wherever the same name is asked for. */
    static final class Params {
        final Map<String, Lin> layers = new LinkedHashMap<>();

        Lin get(String name, long in, long out, boolean tanh) {
            return layers.computeIfAbsent(name, k -> new Lin(Math.abs(k.hashCode() % 100000), in, out, tanh));
        }

        void zeroGrad() {
            layers.values().forEach(Lin::zeroGrad);
        }
    }

    /** Tracks the worst deviation of a quantity over many iterations; one check at the end. */
    static final class Worst {
        private final Map<String, Double> worst = new LinkedHashMap<>();

        void diff(String name, Tensor expected, Tensor actual) {
            double d;
            if (expected == null || actual == null
                    || !Arrays.equals(expected.sizes().vec().get(), actual.sizes().vec().get())) {
                d = Double.POSITIVE_INFINITY;
            } else {
                Tensor e = expected.to(torch.ScalarType.Double);
                Tensor a = actual.to(torch.ScalarType.Double);
                d = e.numel() == 0 ? 0 : a.sub(e).abs().div(e.abs().add(new Scalar(1.0))).max().item_double();
            }
            worst.merge(name, d, Math::max);
        }

        void report(Check check, double tol) {
            worst.forEach((name, d) -> check.isTrue(name, d <= tol,
                    "worst relative deviation " + d + " > " + tol));
        }
    }
}
