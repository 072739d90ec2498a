package io.mn4j.communicator;

import java.nio.ByteBuffer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.pytorch.Tensor;

/**
 * Where the tensors of one rank's side of an MPI "v" collective lie, as MPI wants it: one buffer
 * and a byte count and int displacement per rank. Either the tensors' own memory, relative to the
 * lowest address among them (no copy), or one packed buffer holding them back to back.
 */
final class Displacements {
    final int[] counts;
    final int[] displacements;
    /** The address displacements are relative to; 0 for a packed buffer (see {@link #buffer}). */
    private final long base;
    private final long span;
    private final boolean fits;

    private Displacements(int[] counts, int[] displacements, long base, long span, boolean fits) {
        this.counts = counts;
        this.displacements = displacements;
        this.base = base;
        this.span = span;
        this.fits = fits;
    }

    /** The tensors in place (contiguous CPU tensors of at most 2 GiB each). */
    static Displacements of(Tensor[] ts) {
        int[] counts = new int[ts.length];
        long[] addresses = new long[ts.length];
        for (int r = 0; r < ts.length; r++) {
            counts[r] = (int) ts[r].nbytes();
            addresses[r] = counts[r] == 0 ? 0 : ts[r].data_ptr().address();
        }
        return of(addresses, counts);
    }

    /** Blocks of {@code counts[r]} bytes at {@code addresses[r]} (ignored where the count is 0). */
    static Displacements of(long[] addresses, int[] counts) {
        int n = counts.length;
        long low = Long.MAX_VALUE;
        long high = 0;
        for (int r = 0; r < n; r++) {
            if (counts[r] > 0) {
                low = Math.min(low, addresses[r]);
                high = Math.max(high, addresses[r] + counts[r]);
            }
        }
        if (low == Long.MAX_VALUE) {
            return new Displacements(counts, new int[n], 0, 0, true);
        }
        boolean fits = high - low <= Integer.MAX_VALUE;
        int[] displacements = new int[n];
        for (int r = 0; r < n && fits; r++) {
            displacements[r] = counts[r] == 0 ? 0 : (int) (addresses[r] - low);
        }
        return new Displacements(counts, displacements, low, high - low, fits);
    }

    /** The tensors back to back in one buffer (see {@link #pack}, {@link #unpack}). */
    static Displacements packed(Tensor[] ts) {
        int n = ts.length;
        int[] counts = new int[n];
        int[] displacements = new int[n];
        long offset = 0;
        for (int r = 0; r < n; r++) {
            counts[r] = (int) ts[r].nbytes();
            displacements[r] = (int) offset;
            offset += counts[r];
        }
        return new Displacements(counts, displacements, 0, offset, true);
    }

    /** A new buffer of a {@link #packed} layout's size, its memory uninitialised. */
    Tensor newPackedBuffer() {
        return ReceiveBuffers.empty(WireType.UINT8, new long[] {span}, span);
    }

    /** A new buffer holding the tensors' bytes as this {@link #packed} layout of them says. */
    Tensor pack(Tensor[] ts) {
        Tensor flat = newPackedBuffer();
        for (int r = 0; r < ts.length; r++) {
            copy(ts[r], 0, flat, displacements[r], counts[r]);
        }
        return flat;
    }

    /** Copies the parts of a buffer filled in this {@link #packed} layout into the tensors. */
    void unpack(Tensor flat, Tensor[] ts) {
        for (int r = 0; r < ts.length; r++) {
            copy(flat, displacements[r], ts[r], 0, counts[r]);
        }
    }

    boolean fits() {
        return fits;
    }

    /** The buffer the displacements refer to: the packed one, or a window over the tensors. */
    ByteBuffer buffer(Tensor packedOrNull) {
        if (packedOrNull != null) {
            return TensorBytes.slice(packedOrNull, 0, span);
        }
        if (span == 0) {
            return TensorBytes.EMPTY;
        }
        return TensorBytes.at(base).capacity(span).asByteBuffer();
    }

    private static void copy(Tensor from, long fromOffset, Tensor to, long toOffset, long bytes) {
        if (bytes > 0) {
            Pointer.memcpy(TensorBytes.at(to.data_ptr().address() + toOffset),
                    TensorBytes.at(from.data_ptr().address() + fromOffset), bytes);
        }
    }
}
