package io.mn4j.functions;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.util.List;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;

/** pseudoConnect in one process (it needs no communicator): the gradients it hands on. */
class PseudoConnectTest {
    private static final TensorOptions F64 = new TensorOptions(torch.ScalarType.Double);

    private static Tensor ramp(double offset) {
        return torch.arange(new Scalar(3), F64).add(new Scalar(offset));
    }

    private static double maxDiff(Tensor a, Tensor b) {
        return a.sub(b).abs().max().item_double();
    }

    /**
     * LibTorch's add hands one gradient tensor to both of its inputs; passed on as it is, both
     * leaves would keep the same memory as their gradient, and the next accumulation (or clipping
     * one of them in place) would change both.
     */
    @Test
    void leavesGetGradientsOfTheirOwn() {
        Tensor a = ramp(1).requires_grad_(true);
        Tensor b = ramp(5).requires_grad_(true);
        Tensor c = ramp(-1);
        Tensor d = torch.zeros(new long[0], F64).requires_grad_(true);
        for (int pass = 1; pass <= 2; pass++) {
            List<Tensor> o = Functions.pseudoConnect(d, List.of(a, b));
            o.get(0).add(o.get(1)).mul(c).sum().backward();
            assertNotEquals(a.grad().data_ptr().address(), b.grad().data_ptr().address(), "pass " + pass);
            Tensor expected = c.mul(new Scalar((double) pass));
            assertEquals(0, maxDiff(a.grad(), expected), "a.grad after " + pass + " backward passes");
            assertEquals(0, maxDiff(b.grad(), expected), "b.grad after " + pass + " backward passes");
        }
        a.grad().mul_(new Scalar(0.0));
        assertEquals(0, maxDiff(b.grad(), c.mul(new Scalar(2.0))), "clipping a.grad in place changed b.grad");
    }
}
