package io.mn4j.communicator;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.pytorch.Tensor;

/**
 * Direct {@link ByteBuffer}s over a tensor's own memory, which is what lets MPI send from and
 * receive into tensors without a copy. MPI's Java bindings read a direct buffer from its start
 * (not its position), so a chunk at an offset needs a buffer of its own.
 */
final class TensorBytes {
    private TensorBytes() {
    }

    /** Stands for a buffer MPI does not read (zero bytes). */
    static final ByteBuffer EMPTY = ByteBuffer.allocateDirect(0);

    /** True if MPI can use the tensor's memory as it is. */
    static boolean isWireReady(Tensor t) {
        return !t.is_cuda() && t.is_contiguous();
    }

    /**
     * Whether two tensors on the same kind of device may share memory: their address ranges, from
     * the first element to the last one their strides reach, overlap.
     */
    static boolean overlap(Tensor a, Tensor b) {
        if (a.is_cuda() != b.is_cuda() || a.numel() == 0 || b.numel() == 0) {
            return false;
        }
        return overlap(a.data_ptr().address(), extent(a), b.data_ptr().address(), extent(b));
    }

    /** Whether bytes [a, a + aBytes) and [b, b + bBytes) share any byte (none when either is empty). */
    static boolean overlap(long a, long aBytes, long b, long bBytes) {
        return aBytes > 0 && bBytes > 0 && a < b + bBytes && b < a + aBytes;
    }

    /** Bytes from a non-empty tensor's first element to the end of the last one its strides reach. */
    private static long extent(Tensor t) {
        long last = 0;
        for (int d = 0; d < t.dim(); d++) {
            last += (t.size(d) - 1) * t.stride(d);
        }
        return (last + 1) * t.element_size();
    }

    /** The tensor itself when it is a contiguous CPU tensor, otherwise a contiguous CPU copy. */
    static Tensor wireReady(Tensor t) {
        if (isWireReady(t)) {
            return t;
        }
        return t.is_cuda() ? t.cpu().contiguous() : t.contiguous();
    }

    /**
     * Bytes [offset, offset+length) of a contiguous CPU tensor as a direct buffer that starts at
     * byte {@code offset}, new. (JavaCPP's {@code position(offset).asByteBuffer()} would return a
     * buffer over the whole range with its position at the offset, which MPI ignores.)
     */
    static ByteBuffer slice(Tensor t, long offset, long length) {
        return newBuffer(t.data_ptr().address() + offset, length);
    }

    /**
     * The same bytes as {@link #slice}, as a buffer to hand to MPI only: it may be shared with
     * earlier calls on this thread, so its position and limit must not be changed.
     */
    static ByteBuffer wire(Tensor t, long offset, long length) {
        return length == 0 ? EMPTY : wire(t.data_ptr().address() + offset, length);
    }

    /**
     * {@link #wire} over bytes [address, address + length) of memory the caller keeps alive;
     * {@link #EMPTY} for no bytes (a zero-size tensor may have no memory at all).
     */
    static ByteBuffer wire(long address, long length) {
        return length == 0 ? EMPTY : WireBuffers.MINE.get().over(address, length);
    }

    private static ByteBuffer newBuffer(long address, long length) {
        return new BytePointer(at(address)).capacity(length).asByteBuffer().order(ByteOrder.nativeOrder());
    }

    /**
     * The last few direct buffers this thread handed to MPI, by address and length: making one
     * costs a JNI call (about half a microsecond after a large transfer), and training sends the
     * same memory again and again. Such a buffer is only an address and a length, with no owner,
     * so one over memory freed since and reused by another tensor is right for that tensor too.
     */
    private static final class WireBuffers {
        static final ThreadLocal<WireBuffers> MINE = ThreadLocal.withInitial(WireBuffers::new);
        /** An all-to-all on P ranks hands MPI 2(P - 1) buffers per call: enough for 16 ranks. */
        private static final int ENTRIES = 32;
        private final long[] addresses = new long[ENTRIES];
        private final long[] lengths = new long[ENTRIES];
        private final ByteBuffer[] buffers = new ByteBuffer[ENTRIES];
        private int next;

        ByteBuffer over(long address, long length) {
            for (int i = 0; i < ENTRIES; i++) {
                if (addresses[i] == address && lengths[i] == length && buffers[i] != null) {
                    return buffers[i];
                }
            }
            ByteBuffer b = newBuffer(address, length);
            addresses[next] = address;
            lengths[next] = length;
            buffers[next] = b;
            next = (next + 1) % ENTRIES;
            return b;
        }
    }

    /** A pointer to a native address (for memory that no JavaCPP object describes). */
    static Pointer at(long address) {
        return new Address(address);
    }

    /** JavaCPP lets only subclasses set a pointer's address. */
    private static final class Address extends Pointer {
        Address(long address) {
            this.address = address;
        }
    }

    /** Copies {@code length} bytes from a direct buffer into a tensor's memory. */
    static void copyIn(Tensor t, ByteBuffer from, long fromOffset, long length) {
        if (length == 0) {
            return;
        }
        Pointer dst = t.data_ptr();
        BytePointer src = new BytePointer(from).position(fromOffset);
        Pointer.memcpy(dst, src, length);
    }

    /** Copies a tensor's bytes into a direct buffer at an offset. */
    static void copyOut(Tensor t, ByteBuffer to, long toOffset, long length) {
        if (length == 0) {
            return;
        }
        BytePointer dst = new BytePointer(to).position(toOffset);
        Pointer.memcpy(dst, t.data_ptr(), length);
    }

    /**
     * Copies the first {@code length} bytes of a wire-ready tensor into another at byte
     * {@code toOffset}, with memcpy (no LibTorch dispatch).
     */
    static void copy(Tensor from, Tensor to, long toOffset, long length) {
        if (length > 0) {
            copy(from.data_ptr().address(), to.data_ptr().address() + toOffset, length);
        }
    }

    /** The address of a tensor's first element; 0 for a tensor without memory (zero-size). */
    static long address(Tensor t) {
        Pointer p = t.data_ptr();
        return p == null ? 0 : p.address();
    }

    /** Copies {@code length} bytes between native addresses (of memory the caller keeps alive). */
    static void copy(long from, long to, long length) {
        if (length > 0) {
            Pointer.memcpy(at(to), at(from), length);
        }
    }
}
