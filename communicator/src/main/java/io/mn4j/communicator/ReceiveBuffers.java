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
 * The memory of large received tensors: blocks of the C heap that mn4j allocates itself, and
 * keeps for the next receive of the same size where glibc would not keep them (a small caching
 * host allocator).
 *
 * <p>Why not LibTorch's allocator: it asks for 64-byte aligned memory ({@code posix_memalign}).
 * A block freed and asked for again is then not reused: the aligned request is larger than the
 * freed chunk, whose neighbours are small chunks glibc holds in its per-thread cache, so the next
 * tensor of that size takes another block, and the one after takes the first again. A loop that
 * receives tensors of one size touches twice their memory, and at the sizes of the benchmark
 * (1 to 16 MiB) that costs what a cache miss costs: in one process, a 1 MiB copy into a new
 * {@code torch.empty} took 52–70 µs (two addresses in turn), 37–47 µs into a block malloc hands
 * back (one address) and 35–43 µs into one reused tensor. On 2 ranks (2026-11-27, 4–5 launches
 * each), a 16 MiB ping-pong into new tensors went from 1.6–2.1 ms to 1.20–1.29 ms and the
 * allocating 16 MiB allgather from 3.4–4.0 to 2.6–2.8 ms (C: 1.22 and 2.47 ms), under the glibc
 * settings of {@code scripts/mn4j-run}.
 * Plain {@code malloc} of the same size does hand the same block back; the tensor's data is the
 * first 64-byte boundary in it.
 *
 * <p>Tensors of at least {@link #MIN_BYTES} (256 KiB) come from here; smaller ones from LibTorch,
 * where the per-tensor cost of this path (a Java call when the tensor is freed, about a
 * microsecond) would show and the memory is small enough to stay in cache either way. Their
 * memory comes back when LibTorch frees the tensor, from any thread. The storage of such a
 * tensor cannot be resized in place ({@code resize_} to a larger size throws).
 *
 * <p>Kept for reuse: under glibc's default settings, a large block freed to the C heap is soon
 * split for small allocations or returned to the system, and the next tensor of that size lands
 * on pages never touched before (a page fault per 4 KiB; a fresh 16 MiB receive ran at 0.7 of C's
 * bandwidth against 1.0 with the pool). So at most {@link #MAX_KEPT_BYTES} (32 MiB) of freed
 * blocks are kept, the most recently freed: memory kept here is memory LibTorch cannot use for
 * anything else, so the cap bounds what this adds to a process's peak (a GCN on 4 ranks, 613 MiB
 * per rank, peaked 65 MiB higher with a 64 MiB cap). Older blocks go back to the C heap. System
 * properties {@code mn4j.recvPool.minBytes} and {@code mn4j.recvPool.maxKeptBytes} (0: keep
 * nothing) change the limits.
 *
 * <p>Nothing is kept by default when glibc itself keeps freed memory mapped, as under the
 * {@code GLIBC_TUNABLES} of {@code scripts/mn4j-run} (no mmap'd blocks, no trimming; see
 * {@link #glibcKeepsFreedMemory}): there malloc already hands the block back, and measured
 * (2026-11-26, 2 and 4 ranks, 4 launches each) the allocating allgather and alltoall ran up to 3x
 * slower with the pool in some launches and never clearly faster.
 */
final class ReceiveBuffers {
    static final long MIN_BYTES = Long.getLong("mn4j.recvPool.minBytes", 256L << 10);
    private static final long DEFAULT_KEPT_BYTES = 32L << 20;
    static final long MAX_KEPT_BYTES = Long.getLong("mn4j.recvPool.maxKeptBytes",
            glibcKeepsFreedMemory(System.getenv("GLIBC_TUNABLES")) ? 0 : DEFAULT_KEPT_BYTES);
    private static final int ALIGNMENT = 64;

    /** The buffers every receive uses. */
    private static final ReceiveBuffers SHARED = new ReceiveBuffers(MAX_KEPT_BYTES);

    /** A block of C memory: where malloc put it, its usable size (the pool's key) and its owner. */
    private record Block(long base, long bytes, ReceiveBuffers owner) {
    }

    /** Blocks lent to live tensors, by the aligned address LibTorch holds. */
    private static final Map<Long, Block> LENT = new ConcurrentHashMap<>();

    private static final PointerConsumer RETURN = permanent(new PointerConsumer() {
        @Override
        public void call(Pointer data) {
            Block b = LENT.remove(data.address());
            if (b != null) {
                b.owner.giveBack(b);
            }
        }
    });

    private final long maxKeptBytes;
    /** Free blocks, the most recently freed last. Guarded by itself. */
    private final ArrayDeque<Block> free = new ArrayDeque<>();
    private long keptBytes;

    /** Buffers that keep at most this many bytes of freed blocks (0: none). */
    ReceiveBuffers(long maxKeptBytes) {
        this.maxKeptBytes = maxKeptBytes;
    }

    private static <P extends Pointer> P permanent(P p) {
        p.retainReference();
        return p;
    }

    /** A new contiguous CPU tensor of this dtype and shape, its memory uninitialised. */
    static Tensor empty(WireType type, long[] shape, long nbytes) {
        return SHARED.allocate(type, shape, nbytes);
    }

    /** {@link #empty}, from these buffers. */
    Tensor allocate(WireType type, long[] shape, long nbytes) {
        if (nbytes < MIN_BYTES) {
            return torch.empty(shape, type.options(), null);
        }
        Block b = take(nbytes);
        long aligned = (b.base + ALIGNMENT - 1) & -ALIGNMENT;
        LENT.put(aligned, b);
        Tensor t = null;
        try {
            t = torch.from_blob(TensorBytes.at(aligned), shape, RETURN, type.options());
            return t;
        } finally {
            if (t == null) {
                giveBackIfLent(aligned, b);
            }
        }
    }

    /**
     * Gives {@code b} back unless the deleter already did: LibTorch builds the deleter into the
     * storage before the tensor, so a failure in between runs it. Matched by identity, since by
     * then another thread may have the same address, even the same size, lent anew.
     */
    private void giveBackIfLent(long aligned, Block b) {
        boolean[] ours = {false};
        LENT.computeIfPresent(aligned, (k, v) -> {
            if (v != b) {
                return v;
            }
            ours[0] = true;
            return null;
        });
        if (ours[0]) {
            giveBack(b);
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

    /** Bytes these buffers keep for reuse. */
    long kept() {
        synchronized (free) {
            return keptBytes;
        }
    }

    private Block take(long bytes) {
        synchronized (free) {
            // At most maxKeptBytes / MIN_BYTES blocks: a scan is cheap.
            for (Iterator<Block> it = free.descendingIterator(); it.hasNext();) {
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
        return new Block(p.address(), bytes, this);
    }

    private void giveBack(Block b) {
        List<Block> evicted = new ArrayList<>();
        synchronized (free) {
            if (b.bytes > maxKeptBytes) {
                evicted.add(b);
            } else {
                while (keptBytes + b.bytes > maxKeptBytes) {
                    Block oldest = free.pollFirst();
                    keptBytes -= oldest.bytes;
                    evicted.add(oldest);
                }
                free.addLast(b);
                keptBytes += b.bytes;
            }
        }
        for (Block e : evicted) {
            Pointer.free(TensorBytes.at(e.base));
        }
    }
}
