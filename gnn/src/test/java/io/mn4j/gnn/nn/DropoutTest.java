package io.mn4j.gnn.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.tensor.Tensors;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;

class DropoutTest {
    @Test
    void keepsTheRightFractionScaledAndIsReproducibleFromTheTorchSeed() {
        try (PointerScope s = new PointerScope()) {
            Tensor x = torch.ones(300, 1000);
            torch.manual_seed(5);
            Tensor a = Dropout.apply(x, 0.3, true);
            torch.manual_seed(5);
            Tensor b = Dropout.apply(x, 0.3, true);
            Tensor c = Dropout.apply(x, 0.3, true);
            assertTrue(a.equal(b), "same torch seed, same mask");
            assertTrue(!a.equal(c), "next draw, another mask");
            double kept = a.ne(new Scalar(0.0)).sum().item_double() / x.numel();
            assertEquals(0.7, kept, 0.005, "fraction kept");
            double[] values = Tensors.toDoubleArray(a.index_select(0, a.ne(new Scalar(0.0)).any(1).nonzero().squeeze(1)).reshape(-1));
            for (double v : values) {
                assertTrue(v == 0 || Math.abs(v - 1 / 0.7) < 1e-6, "kept values are scaled by 1/(1-p): " + v);
            }
            assertEquals(1.0, a.mean().item_double(), 0.01, "expectation preserved");
        }
    }

    @Test
    void gradientIsTheMaskAndDoubleInputsStayDouble() {
        try (PointerScope s = new PointerScope()) {
            Tensor x = torch.randn(64, 33).to(ScalarType.Double).set_requires_grad(true);
            Tensor y = Dropout.apply(x, 0.5, true);
            assertEquals(ScalarType.Double, Tensors.type(y));
            y.sum().backward();
            Tensor mask = y.detach().div(x.detach());
            assertTrue(x.grad().allclose(mask, 1e-12, 1e-12, false), "d(sum)/dx is the mask");
        }
    }

    @Test
    void identityWhenNotTrainingOrZeroAndZerosAtOne() {
        try (PointerScope s = new PointerScope()) {
            Tensor x = torch.randn(10, 4);
            assertSame(x, Dropout.apply(x, 0.5, false));
            assertSame(x, Dropout.apply(x, 0.0, true));
            assertEquals(0.0, Dropout.apply(x, 1.0, true).abs().sum().item_double());
            assertThrows(IllegalArgumentException.class, () -> Dropout.apply(x, 1.5, true));
        }
    }
}
