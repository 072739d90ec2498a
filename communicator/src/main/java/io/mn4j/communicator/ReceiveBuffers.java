package io.mn4j.communicator;

import io.mn4j.tensor.Scopes;
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
 * The memory of large received tensors: blocks of the C heap that mn4j allocates itself and keeps
 * for the next receive of the same size (a small caching host allocator).
 *
 * <p>LibTorch's allocator asks for 64-byte aligned memory, which glibc does not hand back for the
 * next tensor of that size, so a loop receiving tensors of one size touched twice their memory (a
 * 16 MiB ping-pong into new tensors took 1.6–2.1 ms that way, 1.20–1.29 ms from here; C: 1.22 ms).
 * Plain {@code malloc} of the same size does hand the same block back; the tensor's data is the
 * first 64-byte boundary in it. Tensors of at least {@link #MIN_BYTES} (256 KiB) come from here,
 * smaller ones from LibTorch, where the cost of this path (a Java call per freed tensor, about a
 * microsecond) would show. Their memory comes back when LibTorch frees the tensor, from any
 * thread; their storage cannot be {@code resize_}d larger.
 *
 * <p>At most {@link #MAX_KEPT_BYTES} (32 MiB) of freed blocks are kept, the most recently freed:
 * glibc would split or unmap them and the next tensor would fault in fresh pages, and the cap
 * bounds what the pool adds to a peak. Nothing is kept when glibc itself keeps freed memory mapped
 * ({@link #glibcKeepsFreedMemory}, as under {@code scripts/mn4j-run}), where the pool measured no
 * faster. {@code -Dmn4j.recvPool.minBytes} and {@code -Dmn4j.recvPool.maxKeptBytes} (0: keep
 * nothing) change the limits.
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

    private static final PointerConsumer RETURN = Scopes.permanent(new PointerConsumer() {
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
