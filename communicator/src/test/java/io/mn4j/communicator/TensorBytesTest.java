package io.mn4j.communicator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;

/** Tensor memory as MPI sees it: overlap (what decides an in-place reduction) and wire buffers. */
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
            assertTrue(TensorBytes.overlap(100, 10, 109, 5), "byte ranges sharing one byte");
            assertFalse(TensorBytes.overlap(100, 10, 110, 5), "adjacent byte ranges");
            assertFalse(TensorBytes.overlap(100, 0, 100, 5), "an empty byte range");
        }
    }

    @Test
    void wireBuffersAreReusedForTheSameBytesAndCoverExactlyThem() {
        try (PointerScope scope = new PointerScope()) {
            Tensor t = torch.arange(new Scalar(64)).to(torch.ScalarType.Byte);
            long base = t.data_ptr().address();
            ByteBuffer b = TensorBytes.wire(t, 8, 16);
            assertEquals(16, b.capacity());
            assertEquals(8, new BytePointer(b).get(0), "starts at the offset");
            assertEquals(base + 8, new BytePointer(b).address());
            assertSame(b, TensorBytes.wire(t, 8, 16), "the same bytes: the same buffer");
            assertSame(b, TensorBytes.wire(base + 8, 16), "by address too");
            assertNotSame(b, TensorBytes.wire(t, 8, 15), "another length");
            assertNotSame(b, TensorBytes.wire(t, 9, 16), "another offset");
            for (int i = 0; i < 40; i++) { // more than the cache holds: still correct, just new
                ByteBuffer other = TensorBytes.wire(t, i, 24);
                assertEquals(base + i, new BytePointer(other).address());
                assertEquals(24, other.capacity());
            }
            assertEquals(base + 8, new BytePointer(TensorBytes.wire(t, 8, 16)).address());
        }
    }
}
