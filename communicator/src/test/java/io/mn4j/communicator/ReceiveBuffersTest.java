package io.mn4j.communicator;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.tensor.Tensors;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;

/** The memory of large received tensors, and the pool that keeps it. */
class ReceiveBuffersTest {
    private static final long[] SHAPE = {512, 256}; // 512 KiB of float32: from ReceiveBuffers
    private static final long CAP = 32L << 20;

    @Test
    void aFreedBlockServesTheNextTensorOfItsSize() {
        ReceiveBuffers pool = new ReceiveBuffers(CAP);
        long first;
        try (PointerScope scope = new PointerScope()) {
            Tensor t = pool.allocate(WireType.FLOAT32, SHAPE, 512 * 256 * 4);
            first = t.data_ptr().address();
            assertEquals(0, first % 64, "64-byte aligned");
            assertArrayEquals(SHAPE, Tensors.shape(t));
            assertTrue(t.is_contiguous());
            t.fill_(new Scalar(3.0));
            assertEquals(3.0 * 512 * 256, t.sum().item_double());
            // As documented: this memory has a fixed size.
            assertThrows(RuntimeException.class, () -> t.resize_(new long[] {1024, 256}));
        }
        assertEquals(512 * 256 * 4, pool.kept(), "the freed block is kept");
        try (PointerScope scope = new PointerScope()) {
            Tensor again = pool.allocate(WireType.FLOAT32, SHAPE, 512 * 256 * 4);
            assertEquals(first, again.data_ptr().address());
            assertEquals(0, pool.kept());
            // Two live tensors of one size get two blocks.
            Tensor other = pool.allocate(WireType.FLOAT32, SHAPE, 512 * 256 * 4);
            assertNotEquals(first, other.data_ptr().address());
        }
    }

    @Test
    void keepsTheMostRecentlyFreedWithinItsCap() {
        ReceiveBuffers pool = new ReceiveBuffers(CAP);
        long big = CAP / 2 + 4096;
        long newest;
        try (PointerScope scope = new PointerScope()) {
            Tensor a = pool.allocate(WireType.UINT8, new long[] {big}, big);
            Tensor b = pool.allocate(WireType.UINT8, new long[] {big + 64}, big + 64);
            a.close();
            newest = b.data_ptr().address();
            b.close(); // both do not fit: a goes back to the C heap, b stays
        }
        // b, freed last, is kept (a cannot be too: together they are more than the cap).
        assertEquals(big + 64, pool.kept());
        try (PointerScope scope = new PointerScope()) {
            Tensor again = pool.allocate(WireType.UINT8, new long[] {big + 64}, big + 64);
            assertEquals(newest, again.data_ptr().address());
        }
    }

    @Test
    void withoutThePoolAFreedBlockIsHandedBackByMalloc() {
        ReceiveBuffers unpooled = new ReceiveBuffers(0);
        try (PointerScope scope = new PointerScope()) {
            Tensor t = unpooled.allocate(WireType.FLOAT32, SHAPE, 512 * 256 * 4);
            assertEquals(0, t.data_ptr().address() % 64, "64-byte aligned");
            t.fill_(new Scalar(3.0));
            assertEquals(3.0 * 512 * 256, t.sum().item_double());
        }
        assertEquals(0, unpooled.kept(), "nothing kept");
        // What LibTorch's aligned allocations do not do under these tunables: the next tensor of a
        // size lands where the last one was (here 49 of 49 rounds, LibTorch's own 0 of 49). glibc
        // decides, and another thread may take the block in between, so most rounds must.
        long previous = 0;
        int same = 0;
        int rounds = 50;
        for (int i = 0; i < rounds; i++) {
            try (PointerScope scope = new PointerScope()) {
                long at = unpooled.allocate(WireType.FLOAT32, SHAPE, 512 * 256 * 4).data_ptr().address();
                same += at == previous ? 1 : 0;
                previous = at;
            }
        }
        assertEquals(0, unpooled.kept(), "nothing kept");
        assertTrue(same >= rounds * 4 / 5, "the block came back in " + same + " of " + (rounds - 1) + " rounds");
    }

    @Test
    void smallTensorsComeFromLibTorch() {
        ReceiveBuffers pool = new ReceiveBuffers(CAP);
        try (PointerScope scope = new PointerScope()) {
            Tensor t = pool.allocate(WireType.FLOAT32, new long[] {16}, 64);
            t.resize_(new long[] {1 << 20}); // LibTorch's own storage can grow; ours cannot
        }
        assertEquals(0, pool.kept());
    }

    @Test
    void testedUnderTheLaunchersMallocSettings() throws IOException {
        String script = Files.readString(Path.of("../scripts/glibc-tunables.sh"));
        String tunables = System.getenv("GLIBC_TUNABLES");
        assertTrue(tunables != null && script.contains("${GLIBC_TUNABLES-" + tunables + "}"),
                "communicator/pom.xml's GLIBC_TUNABLES (" + tunables + ") is not scripts/glibc-tunables.sh's");
        assertEquals(0, ReceiveBuffers.MAX_KEPT_BYTES, "nothing kept by default under them");
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
}
