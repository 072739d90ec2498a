package io.mn4j.communicator;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Direct buffers for tensor headers, reused: made per message, they cost an allocation each and,
 * freed late by the garbage collector, leave holes between the large tensors in the native heap.
 * Blocking calls use two per-thread buffers ({@link #sendBuffer}, {@link #receiveBuffer});
 * nonblocking messages take one from a shared pool ({@link #take}) and {@link #give} it back.
 */
final class HeaderBuffers {
    /** A point-to-point header with its inline payload. */
    static final int MESSAGE_BYTES = TensorHeader.BYTES + Wire.INLINE_BYTES;
    private static final int POOL_LIMIT = 256;

    private static final ConcurrentLinkedQueue<ByteBuffer> POOL = new ConcurrentLinkedQueue<>();
    private static final AtomicInteger POOLED = new AtomicInteger();
    private static final ThreadLocal<ByteBuffer[]> PER_THREAD = ThreadLocal.withInitial(() -> new ByteBuffer[2]);

    private HeaderBuffers() {
    }

    /** A message buffer (header plus inline payload) from the pool, or a new one. */
    static ByteBuffer take() {
        ByteBuffer b = POOL.poll();
        if (b == null) {
            return allocate(MESSAGE_BYTES);
        }
        POOLED.decrementAndGet();
        return b.clear();
    }

    /** Returns a buffer from {@link #take} once MPI no longer uses it. */
    static void give(ByteBuffer b) {
        if (b == null) {
            return;
        }
        if (POOLED.incrementAndGet() <= POOL_LIMIT) {
            POOL.offer(b);
        } else {
            POOLED.decrementAndGet(); // the pool is full: the collector frees this one
        }
    }

    /** This thread's buffer for the headers it sends ({@code headers} of them). */
    static ByteBuffer sendBuffer(int headers) {
        return perThread(0, headers);
    }

    /** This thread's buffer for the headers it receives ({@code headers} of them). */
    static ByteBuffer receiveBuffer(int headers) {
        return perThread(1, headers);
    }

    private static ByteBuffer perThread(int slot, int headers) {
        int bytes = Math.max(headers, 1) * TensorHeader.BYTES;
        ByteBuffer[] buffers = PER_THREAD.get();
        if (buffers[slot] == null || buffers[slot].capacity() < bytes) {
            buffers[slot] = allocate(Math.max(bytes, MESSAGE_BYTES));
        }
        // Zeroed so that unused fields read as 0 (the bad-input marker and reserved fields).
        ByteBuffer b = buffers[slot].clear();
        for (int i = 0; i < bytes; i += Long.BYTES) {
            b.putLong(i, 0L);
        }
        return b;
    }

    private static ByteBuffer allocate(int bytes) {
        return ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
    }
}
