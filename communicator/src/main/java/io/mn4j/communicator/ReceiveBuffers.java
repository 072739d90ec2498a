package io.mn4j.communicator;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.pytorch.PointerConsumer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * Memory of large received tensors, kept for the next receive of the same size instead of being
 * handed back to the C heap (a small caching host allocator).
 *
 * <p>Why: every receive and collective returns a new tensor, while a C program receives into the
 * same buffer again and again. Freed to the C heap, a large block is soon split for small
 * allocations, and the next tensor of that size lands on pages never touched before (a page
 * fault per 4 KiB); measured, a fresh 16 MiB receive ran at 0.7 of C's bandwidth against 1.0
 * for a receive into an existing tensor. Training repeats the same shapes every step, so blocks
 * of exactly the right size, kept aside, make a received tensor as cheap as a reused one.
 *
 * <p>Tensors of at least {@link #MIN_BYTES} (256 KiB) are served from here; their memory comes
 * back when LibTorch frees the tensor, from any thread. At most {@link #MAX_KEPT_BYTES} (32 MiB)
 * are kept, the most recently freed: memory kept here is memory LibTorch cannot use for anything
 * else, so the cap bounds what the pool adds to a process's peak (a GCN on 4 ranks, 613 MiB per
 * rank, peaked 65 MiB higher with a 64 MiB cap). Older blocks go back to the C heap. Blocks
 * are 64-byte aligned, as LibTorch's own. System properties {@code mn4j.recvPool.minBytes} and
 * {@code mn4j.recvPool.maxKeptBytes} (0 turns the pool off) change the limits. The storage of a
 * pooled tensor cannot be resized in place ({@code resize_} to a larger size throws).
 *
 * <p>The pool is off by default when glibc itself keeps freed memory mapped, as under the
 * {@code GLIBC_TUNABLES} of {@code scripts/mn4j-run} (no mmap'd blocks, no trimming; see
 * {@link #glibcKeepsFreedMemory}): there it only adds work, and measured (2026-11-26, 2 and 4
 * ranks, 4 launches each) the allocating allgather and alltoall ran up to 3x slower with it in
 * some launches (2-rank allgather of 1 MiB: 96 us without, 98-378 with) and never clearly faster.
 * Under glibc's defaults it still pays (2-rank allgather of 16 MiB: 3.8 ms against 5.3).
 */
final class ReceiveBuffers {
    static final long MIN_BYTES = Long.getLong("mn4j.recvPool.minBytes", 256L << 10);
    private static final long DEFAULT_KEPT_BYTES = 32L << 20;
    static final long MAX_KEPT_BYTES = Long.getLong("mn4j.recvPool.maxKeptBytes",
            glibcKeepsFreedMemory(System.getenv("GLIBC_TUNABLES")) ? 0 : DEFAULT_KEPT_BYTES);
    private static final int ALIGNMENT = 64;

    /** A block of C memory: where malloc put it and its usable size (the pool's key). */
    private record Block(long base, long bytes) {
    }

    /** Free blocks, the most recently freed last. Guarded by itself. */
    private static final ArrayDeque<Block> FREE = new ArrayDeque<>();
    private static long keptBytes;
    /** Blocks lent to live tensors, by the aligned address LibTorch holds. */
    private static final Map<Long, Block> LENT = new ConcurrentHashMap<>();

    private static final PointerConsumer RETURN = permanent(new PointerConsumer() {
        @Override
        public void call(Pointer data) {
            Block b = LENT.remove(data.address());
            if (b != null) {
                giveBack(b);
            }
        }
    });

    private ReceiveBuffers() {
    }

    private static <P extends Pointer> P permanent(P p) {
        p.retainReference();
        return p;
    }

    /** A new contiguous CPU tensor of this dtype and shape, its memory uninitialised. */
    static Tensor empty(WireType type, long[] shape, long nbytes) {
        if (nbytes < MIN_BYTES || MAX_KEPT_BYTES <= 0) {
            return torch.empty(shape, type.options(), null);
        }
        Block b = take(nbytes);
        long aligned = (b.base + ALIGNMENT - 1) & -ALIGNMENT;
        LENT.put(aligned, b);
        try {
            return torch.from_blob(TensorBytes.at(aligned), shape, RETURN, type.options());
        } catch (RuntimeException e) {
            LENT.remove(aligned);
            giveBack(b);
            throw e;
        }
    }

    /**
     * Whether these glibc tunables already keep freed memory mapped for the next allocation of
     * its size, as the pool would: {@code glibc.malloc.mmap_max=0} (no block gets its own
     * mapping, which free would unmap) and a {@code glibc.malloc.trim_threshold} of at least the
     * pool's default 32 MiB (the heap's top is not given back either). Values glibc would not
     * read as plain decimal numbers count as unset.
     */
    static boolean glibcKeepsFreedMemory(String tunables) {
        if (tunables == null) {
            return false;
        }
        boolean noMmap = false;
        long trimThreshold = -1;
        for (String setting : tunables.split(":")) {
            int eq = setting.indexOf('=');
            if (eq < 0) {
                continue;
            }
            String name = setting.substring(0, eq).trim();
            String value = setting.substring(eq + 1).trim();
            try {
                if (name.equals("glibc.malloc.mmap_max")) {
                    noMmap = Long.parseLong(value) == 0;
                } else if (name.equals("glibc.malloc.trim_threshold")) {
                    trimThreshold = Long.parseLong(value);
                }
            } catch (NumberFormatException e) {
                // not a setting we can read: as if unset, which keeps the pool on
            }
        }
        return noMmap && trimThreshold >= DEFAULT_KEPT_BYTES;
    }

    /** Bytes currently kept for reuse (for tests and diagnostics). */
    static long keptBytes() {
        synchronized (FREE) {
            return keptBytes;
        }
    }

    private static Block take(long bytes) {
        synchronized (FREE) {
            // At most MAX_KEPT_BYTES / MIN_BYTES blocks: a scan is cheap.
            for (Iterator<Block> it = FREE.descendingIterator(); it.hasNext();) {
                Block b = it.next();
                if (b.bytes == bytes) {
                    it.remove();
                    keptBytes -= b.bytes;
                    return b;
                }
            }
        }
        Pointer p = Pointer.malloc(bytes + ALIGNMENT);
        if (p == null || p.isNull()) {
            throw new OutOfMemoryError("mn4j: no memory for a received tensor of " + bytes + " bytes");
        }
        return new Block(p.address(), bytes);
    }

    private static void giveBack(Block b) {
        List<Block> evicted = new ArrayList<>();
        synchronized (FREE) {
            if (b.bytes > MAX_KEPT_BYTES) {
                evicted.add(b);
            } else {
                while (keptBytes + b.bytes > MAX_KEPT_BYTES) {
                    Block oldest = FREE.pollFirst();
                    keptBytes -= oldest.bytes;
                    evicted.add(oldest);
                }
                FREE.addLast(b);
                keptBytes += b.bytes;
            }
        }
        for (Block e : evicted) {
            Pointer.free(TensorBytes.at(e.base));
        }
    }
}
