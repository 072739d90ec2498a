package io.mn4j.communicator;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;

/** The pool of large receive buffers. */
class ReceiveBuffersTest {
    private static final long[] SHAPE = {512, 256}; // 512 KiB of float32: pooled by default

    @Test
    void aFreedBlockServesTheNextTensorOfItsSize() {
        long first;
        try (PointerScope scope = new PointerScope()) {
            Tensor t = ReceiveBuffers.empty(WireType.FLOAT32, SHAPE, 512 * 256 * 4);
            first = t.data_ptr().address();
            assertEquals(0, first % 64, "64-byte aligned");
            assertArrayEquals(SHAPE, Shapes.of(t));
            assertTrue(t.is_contiguous());
            t.fill_(new Scalar(3.0));
            assertEquals(3.0 * 512 * 256, t.sum().item_double());
            // As documented: the pool's memory has a fixed size.
            assertThrows(RuntimeException.class, () -> t.resize_(new long[] {1024, 256}));
        }
        assertTrue(ReceiveBuffers.keptBytes() >= 512 * 256 * 4, "the freed block is kept");
        try (PointerScope scope = new PointerScope()) {
            Tensor again = ReceiveBuffers.empty(WireType.FLOAT32, SHAPE, 512 * 256 * 4);
            assertEquals(first, again.data_ptr().address());
            // Two live tensors of one size get two blocks.
            Tensor other = ReceiveBuffers.empty(WireType.FLOAT32, SHAPE, 512 * 256 * 4);
            assertNotEquals(first, other.data_ptr().address());
        }
    }

    @Test
    void keepsTheMostRecentlyFreedWithinItsCap() {
        long big = ReceiveBuffers.MAX_KEPT_BYTES / 2 + 4096;
        long newest;
        try (PointerScope scope = new PointerScope()) {
            Tensor a = ReceiveBuffers.empty(WireType.UINT8, new long[] {big}, big);
            Tensor b = ReceiveBuffers.empty(WireType.UINT8, new long[] {big + 64}, big + 64);
            a.close();
            newest = b.data_ptr().address();
            b.close(); // both do not fit: a goes back to the C heap, b stays
        }
        long kept = ReceiveBuffers.keptBytes();
        assertTrue(kept <= ReceiveBuffers.MAX_KEPT_BYTES, () -> "kept " + kept);
        // b, freed last, is kept (a cannot be too: together they are more than the cap).
        assertTrue(kept >= big + 64, () -> "kept " + kept + ", less than the last freed block of " + (big + 64));
        try (PointerScope scope = new PointerScope()) {
            Tensor again = ReceiveBuffers.empty(WireType.UINT8, new long[] {big + 64}, big + 64);
            assertEquals(newest, again.data_ptr().address());
        }
    }

    @Test
    void smallTensorsComeFromLibTorch() {
        try (PointerScope scope = new PointerScope()) {
            long kept = ReceiveBuffers.keptBytes();
            Tensor t = ReceiveBuffers.empty(WireType.FLOAT32, new long[] {16}, 64);
            t.resize_(new long[] {1 << 20}); // LibTorch's own storage can grow; a pooled one cannot
            assertEquals(kept, ReceiveBuffers.keptBytes());
        }
    }
}
