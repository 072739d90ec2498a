package io.mn4j.communicator;

import java.util.function.LongConsumer;
import mpi.MPIException;
import org.bytedeco.pytorch.Tensor;

/**
 * The point-to-point operations as a layer of argument checks around {@link Wire}: a peer or tag
 * out of range fails before anything moves, and a tensor that cannot be sent is announced to its
 * receiver, whose receive then fails too instead of waiting.
 */
final class CheckedPointToPoint {
    private final Wire wire;
    private final int rank;
    private final int size;
    private final int maxTag;

    CheckedPointToPoint(Wire wire, int rank, int size, int maxTag) {
        this.wire = wire;
        this.rank = rank;
        this.size = size;
        this.maxTag = maxTag;
    }

    /** Throws unless {@code peer} and {@code tag} are in range (and {@code peer} is not this rank, for a blocking call). */
    void checkPeer(String op, int peer, int tag, boolean selfAllowed) {
        if (peer < 0 || peer >= size) {
            throw new CommunicationException(op + " on rank " + rank + ": peer rank " + peer
                    + " is outside [0, " + size + ")");
        }
        if (tag < 0 || tag > maxTag) {
            throw new CommunicationException(op + " on rank " + rank + " with rank " + peer + ": tag " + tag
                    + " is outside [0, " + maxTag + "] (MPI_TAG_UB of this MPI, see maxTag())");
        }
        if (peer == rank && !selfAllowed) {
            throw new CommunicationException(op + " on rank " + rank + ": a blocking " + op
                    + " to oneself would deadlock; use isend/irecv or keep the tensor");
        }
    }

    /** Blocking send; returns the payload bytes. */
    long send(Tensor x, int dst, int tag) throws MPIException {
        TensorHeader h = sendableHeader("send", x, dst, tag);
        return wire.send(TensorBytes.wireReady(x), h, dst, tag, describeCall("send", dst, tag));
    }

    /** Blocking receive, into {@code into} if it is not null. */
    Tensor recv(int src, int tag, Tensor into) throws MPIException {
        return wire.recv(src, tag, into, describeCall("recv", src, tag));
    }

    SendHandle isend(Tensor x, int dst, int tag) throws MPIException {
        TensorHeader h = sendableHeader("isend", x, dst, tag);
        // MPI reads the tensor after this call returns, perhaps after the caller's scope closed.
        Tensor w = HeldTensors.make(() -> {
            Tensor ready = TensorBytes.wireReady(x);
            return ready == x ? new Tensor(x) : ready;
        });
        try {
            return wire.isend(w, h, dst, tag, describeCall("isend", dst, tag));
        } catch (MPIException | RuntimeException e) {
            HeldTensors.release(w);
            throw e;
        }
    }

    /** {@code onComplete} gets the payload bytes once they have arrived. */
    RecvHandle irecv(int src, int tag, LongConsumer onComplete) throws MPIException {
        return wire.irecv(src, tag, describeCall("irecv", src, tag), onComplete);
    }

    /**
     * The header of {@code x}; if it cannot be sent (null, an unsupported dtype), throws after
     * telling {@code dst}, whose receive would otherwise wait for it.
     */
    private TensorHeader sendableHeader(String op, Tensor x, int dst, int tag) throws MPIException {
        try {
            return Outgoing.headerOf(x);
        } catch (CommunicationException e) {
            wire.sendUnsendable(dst, tag);
            throw new CommunicationException(describeCall(op, dst, tag) + ": " + e.getMessage() + " (rank " + dst
                    + "'s receive fails with it)", e);
        }
    }

    /** "send (rank 0 to rank 1, tag 5)": a point-to-point call, for its errors. */
    String describeCall(String op, int peer, int tag) {
        return describeCall(op, rank, peer, tag);
    }

    /** {@link #describeCall(String, int, int)} of a call on rank {@code rank}. */
    static String describeCall(String op, int rank, int peer, int tag) {
        return op + " (rank " + rank + (op.contains("send") ? " to rank " : " from rank ") + peer
                + ", tag " + tag + ")";
    }
}
