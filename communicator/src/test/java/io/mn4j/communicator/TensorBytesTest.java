package io.mn4j.communicator;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;

/** Whether two tensors may share memory: what decides an in-place reduction. */
class TensorBytesTest {
    @Test
    void overlapFollowsTheMemoryEachTensorReaches() {
        try (PointerScope scope = new PointerScope()) {
            Tensor base = torch.zeros(20);
            assertTrue(TensorBytes.overlap(base, base), "a tensor and itself");
            assertFalse(TensorBytes.overlap(base.narrow(0, 0, 10), base.narrow(0, 10, 10)), "adjacent halves");
            assertTrue(TensorBytes.overlap(base.narrow(0, 0, 10), base.narrow(0, 9, 10)), "one element shared");
            Tensor grid = base.view(4, 5);
            assertTrue(TensorBytes.overlap(grid.t(), base.narrow(0, 19, 1)), "a transposed view reaches the last element");
            assertFalse(TensorBytes.overlap(grid.select(1, 0), base.narrow(0, 16, 4)), "a strided column ends before");
            assertTrue(TensorBytes.overlap(grid.select(1, 0), base.narrow(0, 11, 2)),
                    "the strided column's span covers elements it skips: conservative, not exact");
            assertFalse(TensorBytes.overlap(base.narrow(0, 3, 0), base), "an empty tensor shares nothing");
            assertFalse(TensorBytes.overlap(base, torch.zeros(20)), "separate allocations");
        }
    }
}
