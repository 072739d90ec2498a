package io.mn4j.communicator;

import java.util.List;
import mpi.MPIException;
import mpi.Request;
import org.bytedeco.pytorch.Tensor;

/**
 * The payload of a nonblocking send to another host, posted a few pieces at a time. Open MPI
 * sends everything for one peer over one TCP connection, in order: a large payload posted whole
 * makes every later message to that peer (the next collective's, say) wait until all of it has
 * crossed. Posted in pieces, topped up as earlier ones complete (by the transfer progress thread
 * while the program computes, or by a wait), it keeps at most {@link #DEPTH} pieces ahead of
 * them. The receiver splits the payload by the piece size its header names, as for any chunks.
 */
final class PacedPayload {
    /** Bytes per piece ({@code -Dmn4j.pacedSendBytes}; 0: sends are never paced). */
    static final long PIECE_BYTES = Long.getLong("mn4j.pacedSendBytes", 512L << 10);
    /** Pieces in flight at most ({@code -Dmn4j.pacedSendDepth}). */
    static final int DEPTH = Math.max(1, Integer.getInteger("mn4j.pacedSendDepth", 4));

    private final Wire wire;
    private final Tensor data;
    private final long nbytes;
    private final int dst;
    private final int tag;
    private final long piece;
    /** Offset of the first byte not yet posted. */
    private long next;

    PacedPayload(Wire wire, Tensor data, long nbytes, int dst, int tag, long piece) {
        this.wire = wire;
        this.data = data;
        this.nbytes = nbytes;
        this.dst = dst;
        this.tag = tag;
        this.piece = piece;
    }

    /**
     * Whether a send of {@code nbytes} to world rank {@code worldRank} should be paced: a large one
     * to another host, only where the transfer progress thread runs, since nothing else would post
     * the rest while the program computes. The size is checked first: most sends end there.
     */
    static boolean applies(long nbytes, int worldRank) {
        return PIECE_BYTES > 0 && nbytes > PIECE_BYTES && TransferProgress.running() && JobLayout.onOtherHost(worldRank);
    }

    /** Whether pieces remain to be posted. */
    boolean unposted() {
        return next < nbytes;
    }

    /** Posts pieces until {@code into} holds {@link #DEPTH} requests or none remains. */
    void topUp(List<Request> into) throws MPIException {
        next = wire.isendChunks(data, nbytes, dst, tag, piece, next, Math.max(0, DEPTH - into.size()), into);
    }

    /** Posts every remaining piece (a later message on the same peer and tag must come after them). */
    void postAll(List<Request> into) throws MPIException {
        next = wire.isendChunks(data, nbytes, dst, tag, piece, next, Integer.MAX_VALUE, into);
    }

    /** Every piece of {@code handle}'s payload is posted: later sends to the peer and tag need not wait for it. */
    void posted(SendHandle handle) {
        wire.pacedSendPosted(dst, tag, handle);
    }

    /** Posting a piece failed: later sends to the peer and tag would feed its receive's missing pieces. */
    void broken(String reason) {
        wire.pacedSendBroken(dst, tag, reason);
    }
}
