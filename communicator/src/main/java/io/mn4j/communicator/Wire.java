package io.mn4j.communicator;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongConsumer;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;
import mpi.Request;
import mpi.Status;
import org.bytedeco.pytorch.Tensor;

/**
 * The point-to-point protocol: a header message (shape and dtype) followed by the payload.
 *
 * <p>Payloads of at most {@link #INLINE_BYTES} bytes travel inside the header message, so a small
 * tensor costs one MPI message and no round trip. Larger payloads go as a second message, on a
 * separate communicator so that a posted header receive can never match a payload, sent from
 * and received into the tensor's own memory, in chunks of at most {@code chunkBytes}.
 */
final class Wire {
    static final int INLINE_BYTES = 1024;

    private final Intracomm headerComm;
    private final Intracomm payloadComm;
    private volatile long chunkBytes;
    /** The newest outstanding nonblocking receive per (source, tag), to keep payloads in order. */
    private final Map<Long, RecvHandle> lastReceive = new ConcurrentHashMap<>();

    Wire(Intracomm headerComm, Intracomm payloadComm, long chunkBytes) {
        this.headerComm = headerComm;
        this.payloadComm = payloadComm;
        this.chunkBytes = chunkBytes;
    }

    void setChunkBytes(long bytes) {
        this.chunkBytes = bytes;
    }

    long chunkBytes() {
        return chunkBytes;
    }

    /** Writes the header (and an inline payload) into a buffer; returns the message length. */
    private static int packHeader(TensorHeader h, Tensor data, ByteBuffer buf) {
        h.write(buf.asLongBuffer(), 0);
        if (h.nbytes <= INLINE_BYTES) {
            TensorBytes.copyOut(data, buf, TensorHeader.BYTES, h.nbytes);
            return TensorHeader.BYTES + (int) h.nbytes;
        }
        return TensorHeader.BYTES;
    }

    /** Blocking send of a wire-ready tensor; returns the payload bytes. */
    long send(Tensor data, int dst, int tag) throws MPIException {
        TensorHeader h = TensorHeader.of(data);
        ByteBuffer buf = HeaderBuffers.mine(1);
        int length = packHeader(h, data, buf);
        headerComm.send(buf, length, MPI.BYTE, dst, tag);
        if (h.nbytes > INLINE_BYTES) {
            sendPayload(data, h.nbytes, dst, tag);
        }
        Reference.reachabilityFence(data);
        return h.nbytes;
    }

    /**
     * Blocking receive. With {@code into}, the message must match its dtype and shape (the
     * payload is drained first, so a mismatch leaves no message behind); without, a new tensor.
     */
    Tensor recv(int src, int tag, Tensor into, String context) throws MPIException {
        ByteBuffer buf = HeaderBuffers.all(1);
        headerComm.recv(buf, HeaderBuffers.MESSAGE_BYTES, MPI.BYTE, src, tag);
        TensorHeader h = TensorHeader.read(buf.asLongBuffer(), 0, context);
        boolean fits = into == null || h.matches(into);
        Tensor out = fits && into != null && TensorBytes.isWireReady(into) ? into : h.allocate();
        if (h.nbytes <= INLINE_BYTES) {
            TensorBytes.copyIn(out, buf, TensorHeader.BYTES, h.nbytes);
        } else {
            recvPayload(out, h.nbytes, src, tag);
        }
        if (!fits) {
            throw new CommunicationException(context + ": rank " + src + " sent " + h
                    + " but the receiving tensor is " + TensorHeader.describe(into));
        }
        if (into != null && out != into) {
            into.copy_(out);
            return into;
        }
        return out;
    }

    void sendPayload(Tensor data, long nbytes, int dst, int tag) throws MPIException {
        long chunk = chunkBytes;
        for (long off = 0; off < nbytes; off += chunk) {
            int len = (int) Math.min(chunk, nbytes - off);
            payloadComm.send(TensorBytes.slice(data, off, len), len, MPI.BYTE, dst, tag);
        }
    }

    void recvPayload(Tensor out, long nbytes, int src, int tag) throws MPIException {
        long chunk = chunkBytes;
        for (long off = 0; off < nbytes; off += chunk) {
            int len = (int) Math.min(chunk, nbytes - off);
            payloadComm.recv(TensorBytes.slice(out, off, len), len, MPI.BYTE, src, tag);
        }
    }

    void isendPayload(Tensor data, long nbytes, int dst, int tag, List<Request> into) throws MPIException {
        long chunk = chunkBytes;
        for (long off = 0; off < nbytes; off += chunk) {
            int len = (int) Math.min(chunk, nbytes - off);
            into.add(payloadComm.iSend(TensorBytes.slice(data, off, len), len, MPI.BYTE, dst, tag));
        }
    }

    void irecvPayload(Tensor out, long nbytes, int src, int tag, List<Request> into) throws MPIException {
        long chunk = chunkBytes;
        for (long off = 0; off < nbytes; off += chunk) {
            int len = (int) Math.min(chunk, nbytes - off);
            into.add(payloadComm.iRecv(TensorBytes.slice(out, off, len), len, MPI.BYTE, src, tag));
        }
    }

    SendHandle isend(Tensor data, int dst, int tag) throws MPIException {
        TensorHeader h = TensorHeader.of(data);
        ByteBuffer buf = HeaderBuffers.take();
        int length = packHeader(h, data, buf);
        List<Request> requests = new ArrayList<>();
        requests.add(headerComm.iSend(buf, length, MPI.BYTE, dst, tag));
        if (h.nbytes > INLINE_BYTES) {
            isendPayload(data, h.nbytes, dst, tag, requests);
        }
        return new SendHandle(requests, data, buf, h.nbytes);
    }

    /** Posts a nonblocking receive; {@code onComplete} gets the payload bytes once it has arrived. */
    RecvHandle irecv(int src, int tag, String context, LongConsumer onComplete) throws MPIException {
        ByteBuffer buf = HeaderBuffers.take();
        Request headerRequest = headerComm.iRecv(buf, HeaderBuffers.MESSAGE_BYTES, MPI.BYTE, src, tag);
        long key = ((long) src << 32) | (tag & 0xffffffffL);
        RecvHandle handle = new RecvHandle(this, key, src, tag, buf, headerRequest, context, onComplete);
        handle.follow(lastReceive.put(key, handle));
        return handle;
    }

    /** Called by a receive once its payload receive is posted: later ones no longer wait on it. */
    void posted(long key, RecvHandle handle) {
        lastReceive.remove(key, handle);
    }

    static Status waitAll(List<Request> requests) throws MPIException {
        Status last = null;
        for (Request r : requests) {
            last = r.waitStatus();
        }
        return last;
    }
}
