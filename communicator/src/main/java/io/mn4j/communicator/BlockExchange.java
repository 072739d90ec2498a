package io.mn4j.communicator;

import java.nio.ByteBuffer;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;
import mpi.Message;
import mpi.Request;
import mpi.Status;

/**
 * Equal blocks moved point to point straight between tensors' memories, for
 * {@link Communicator#allgatherInto} and {@link Communicator#alltoallInto}, checked without a
 * round of its own: every message's tag is its sender's signature (operation, dtype and shape),
 * and every rank receives from every other, so a mismatch anywhere is seen, and reported, by every
 * rank. A round plus MPI_Allgather/MPI_Alltoall would synchronise all ranks twice per call (on four
 * ranks sharing two cores the round cost 15–45 µs at 1 MiB).
 *
 * <p>A rank with invalid input still takes part, with empty messages tagged {@link #INVALID}; a
 * message that does not match is received into memory of its own, never cut short into the
 * output. Chunks after the first are posted only once every rank knows that every signature and,
 * by a small all-reduce, every block size matched, so no rank posts a chunk its peers do not
 * expect, whatever their chunk sizes.
 */
final class BlockExchange {
    /** The tag of a rank with invalid input; signatures are never this. */
    static final int INVALID = 0;
    /** The tag of the chunks after the first, once signatures matched. */
    private static final int MORE = 1;

    private final Intracomm comm;
    private final int rank;
    private final int size;
    private final int tagBits;
    /**
     * Copy this rank's own block before the exchange, while the peers pull theirs by a single copy
     * (all on one host); across hosts after it, where a copy first only delays the rendezvous and
     * cost a quarter of the bandwidth at 4-8 MiB over TCP.
     */
    private final boolean ownBlockFirst;

    /** {@code acrossHosts}: whether {@code comm}'s ranks run on more than one host (alike on every rank). */
    BlockExchange(Intracomm comm, boolean acrossHosts) throws MPIException {
        this.comm = comm;
        this.rank = comm.getRank();
        this.size = comm.getSize();
        this.tagBits = ShapeTag.usableBits();
        this.ownBlockFirst = !acrossHosts;
    }

    /**
     * The tag of a valid call: the dtype's code (1 to 9) in the top four bits, so that it is never
     * {@link #INVALID} or {@link #MORE}; below them the {@link #moreChunks} bit, and below that a
     * hash of the operation and the shape. Shapes that differ with the same dtype and byte count
     * go unnoticed with a chance of one in 2^25 (their bytes are in the same order).
     */
    int signature(int op, TensorHeader h) {
        long hash = (h.fingerprint() * 31 + op) * 0x9E3779B97F4A7C15L;
        int shapeBits = tagBits - 4;
        return h.type.code << shapeBits | (int) ((hash >>> 20) & ((1L << (shapeBits - 1)) - 1));
    }

    /** The bit of a signature that says that chunks follow the first. */
    private int moreChunks() {
        return 1 << (tagBits - 5);
    }

    /**
     * Sends block {@code p} of the bytes at {@code from} ({@code [p * sendStride, p * sendStride +
     * block)}) to every rank p and writes the block from rank p at {@code into + p * block}, this
     * rank's own block copied. Returns true if every rank passed this rank's signature (and it is
     * not {@link #INVALID}), in which case {@code into} holds every block; false on every rank
     * otherwise, with {@code into} unspecified. The addresses are of memory the caller keeps alive
     * and that does not overlap; they are not read when the signature is {@link #INVALID}.
     */
    boolean exchange(int signature, long from, long sendStride, long into, long block, long chunkBytes)
            throws MPIException {
        boolean valid = signature != INVALID;
        long first = valid ? Math.min(block, chunkBytes) : 0;
        // In the tag: ranks that would post different numbers of chunks never match.
        boolean more = first < block;
        int tag = more ? signature | moreChunks() : signature;
        Request[] sends = new Request[size];
        // Staggered peers, so that the ranks do not all start with rank 0.
        for (int i = 1; i < size; i++) {
            int dst = (rank + i) % size;
            sends[dst] = comm.iSend(TensorBytes.wire(from + dst * sendStride, first), (int) first, MPI.BYTE, dst, tag);
        }
        if (valid && ownBlockFirst) { // while the peers pull this rank's blocks
            TensorBytes.copy(from + rank * sendStride, into + rank * block, block);
        }
        boolean agreed = valid;
        Request[] receives = new Request[size];
        for (int i = 1; i < size; i++) {
            int src = (rank + size - i) % size;
            // Probed first: a receive shorter than its message is MPI_ERR_TRUNCATE, after which
            // Open MPI 4.1's single-copy transfer writes past the receive buffer.
            Message m = new Message();
            Status s = m.mProbe(src, MPI.ANY_TAG, comm);
            int count = s.getCount(MPI.BYTE);
            if (agreed && s.getTag() == tag && count == first) {
                receives[src] = m.imRecv(TensorBytes.wire(into + src * block, first), (int) first, MPI.BYTE);
            } else {
                agreed = false;
                discard(m, count);
            }
        }
        waitAll(receives);
        waitAll(sends);
        if (valid && !ownBlockFirst) {
            TensorBytes.copy(from + rank * sendStride, into + rank * block, block);
        }
        if (agreed && more) {
            // Every rank is here with chunks of `first` bytes; a hash alone must not decide how
            // many more chunks each posts.
            agreed = AgreementRound.sameOnEveryRank(comm, true, block);
        }
        if (agreed) {
            for (long off = first; off < block; off += chunkBytes) {
                exchangeChunk(from + off, sendStride, into + off, block, Math.min(chunkBytes, block - off));
            }
        }
        return agreed;
    }

    /** Receives a message that does not belong in the output into memory of its own size (an error path). */
    private static void discard(Message m, int count) throws MPIException {
        ByteBuffer scratch = count == 0 ? TensorBytes.EMPTY : ByteBuffer.allocateDirect(count);
        m.mRecv(scratch, count, MPI.BYTE);
    }

    private static void waitAll(Request[] requests) throws MPIException {
        for (Request r : requests) {
            if (r != null) {
                r.waitFor();
            }
        }
    }

    private void exchangeChunk(long from, long sendStride, long into, long block, long len) throws MPIException {
        Request[] requests = new Request[2 * (size - 1)];
        int n = 0;
        for (int i = 1; i < size; i++) {
            int src = (rank + size - i) % size;
            requests[n++] = comm.iRecv(TensorBytes.wire(into + src * block, len), (int) len, MPI.BYTE, src, MORE);
        }
        for (int i = 1; i < size; i++) {
            int dst = (rank + i) % size;
            requests[n++] = comm.iSend(TensorBytes.wire(from + dst * sendStride, len), (int) len, MPI.BYTE, dst, MORE);
        }
        for (Request r : requests) {
            r.waitFor();
        }
    }
}
