package io.mn4j.communicator;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

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
        assumePoolOn();
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
        assumePoolOn();
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

    @Test
    void offWhereGlibcKeepsFreedMemoryItself() {
        // scripts/glibc-tunables.sh's setting
        assertTrue(ReceiveBuffers.glibcKeepsFreedMemory("glibc.malloc.arena_max=1:glibc.malloc.mmap_max=0"
                + ":glibc.malloc.trim_threshold=1099511627776:glibc.malloc.hugetlb=1"));
        assertTrue(ReceiveBuffers.glibcKeepsFreedMemory("glibc.malloc.trim_threshold=33554432:glibc.malloc.mmap_max=0"));
        // Either half alone leaves freed blocks to be unmapped or trimmed: the pool stays on.
        assertFalse(ReceiveBuffers.glibcKeepsFreedMemory(null));
        assertFalse(ReceiveBuffers.glibcKeepsFreedMemory(""));
        assertFalse(ReceiveBuffers.glibcKeepsFreedMemory("glibc.malloc.mmap_max=0"));
        assertFalse(ReceiveBuffers.glibcKeepsFreedMemory("glibc.malloc.trim_threshold=1099511627776"));
        assertFalse(ReceiveBuffers.glibcKeepsFreedMemory("glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=131072"));
        assertFalse(ReceiveBuffers.glibcKeepsFreedMemory("glibc.malloc.mmap_max=4:glibc.malloc.trim_threshold=1099511627776"));
        assertFalse(ReceiveBuffers.glibcKeepsFreedMemory("glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=lots"));
    }

    private static void assumePoolOn() {
        assumeTrue(ReceiveBuffers.MAX_KEPT_BYTES > 0,
                "the pool is off in this JVM (GLIBC_TUNABLES that keep freed memory, or mn4j.recvPool.maxKeptBytes=0)");
    }
}
