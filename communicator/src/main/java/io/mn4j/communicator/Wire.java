package io.mn4j.communicator;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;
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
 * The point-to-point protocol: a header message (shape, dtype and the sender's chunk size)
 * followed by the payload, which travels inside the header message up to {@link #INLINE_BYTES}
 * (one MPI message for a small tensor) and otherwise on a communicator of its own, so that a
 * posted header receive never matches a payload. The receiver splits by the sender's chunk size,
 * never its own: a receive shorter than its message is MPI_ERR_TRUNCATE, after which Open MPI
 * 4.1's single-copy transfer may write past the buffer. The collectives' exchange of tensors
 * is {@link TensorExchange}'s.
 */
final class Wire {
    static final int INLINE_BYTES = 1024;

    private final Intracomm headerComm;
    private final Intracomm payloadComm;
    private volatile long chunkBytes;
    /** The communicator's members, for what a wait on a handle reports to the watchdog. */
    private final Members members;
    /**
     * The newest nonblocking receive per (source, tag) whose payload receive is not yet posted: it
     * posts its predecessors' first, which keeps payloads in order.
     */
    private final Map<Long, RecvHandle> lastReceive = new ConcurrentHashMap<>();
    private final ReceiveProgress progress = new ReceiveProgress(lastReceive::values, "mn4j-receive-progress");
    /** (source, tag) pairs whose stream lost its order (a payload left queued), with the reason. */
    private final Map<Long, String> broken = new ConcurrentHashMap<>();
    /** (destination, tag) pairs whose last message was cut short (its receiver waits for the rest). */
    private final Map<Long, String> brokenSends = new ConcurrentHashMap<>();
    /** The last send per (destination, tag) whose payload is paced and may not be posted whole yet. */
    private final Map<Long, SendHandle> pacedSends = new ConcurrentHashMap<>();

    Wire(Intracomm headerComm, Intracomm payloadComm, long chunkBytes, Members members) throws MPIException {
        this.headerComm = headerComm;
        this.members = members;
        this.payloadComm = payloadComm;
        this.chunkBytes = chunkBytes;
    }

    /** The communicator that carries payloads (and all of an exchange's messages). */
    Intracomm payloadComm() {
        return payloadComm;
    }

    Members members() {
        return members;
    }

    void setChunkBytes(long bytes) {
        this.chunkBytes = bytes;
    }

    long chunkBytes() {
        return chunkBytes;
    }

    /**
     * Writes the header (and an inline payload) into a buffer, with the chunk size the payload
     * will be sent in; returns the message length.
     */
    private static int packHeader(TensorHeader h, Tensor data, ByteBuffer buf, long chunk) {
        h.write(buf.asLongBuffer(), 0, chunk);
        if (h.nbytes <= INLINE_BYTES) {
            TensorBytes.copyOut(data, buf, TensorHeader.BYTES, h.nbytes);
            return TensorHeader.BYTES + (int) h.nbytes;
        }
        return TensorHeader.BYTES;
    }

    /** Blocking send of a wire-ready tensor with its header; returns the payload bytes. */
    long send(Tensor data, TensorHeader h, int dst, int tag, String context) throws MPIException {
        requireSendable(dst, tag, context);
        postPacedBefore(dst, tag);
        ByteBuffer buf = HeaderBuffers.sendBuffer(1);
        long chunk = chunkBytes; // once: the header promises the chunks sent
        int length = packHeader(h, data, buf, chunk);
        headerComm.send(buf, length, MPI.BYTE, dst, tag);
        if (h.nbytes > INLINE_BYTES) {
            try {
                sendPayload(data, h.nbytes, dst, tag, chunk);
            } catch (MPIException | RuntimeException | Error e) {
                brokenSend(key(dst, tag), context + " failed after its header was sent (" + e + ")");
                throw e;
            }
        }
        Reference.reachabilityFence(data);
        return h.nbytes;
    }

    /**
     * Tells {@code dst} that this rank's tensor for it cannot be sent (null, unsupported dtype):
     * a header message with the invalid mark, so that its receive fails instead of waiting. The
     * mark is a constant buffer, so the send need not be waited for.
     */
    void sendUnsendable(int dst, int tag) throws MPIException {
        headerComm.iSend(UNSENDABLE_MARK, TensorHeader.BYTES, MPI.BYTE, dst, tag).free();
    }

    private static final ByteBuffer UNSENDABLE_MARK = unsendableMark();

    private static ByteBuffer unsendableMark() {
        ByteBuffer b = ByteBuffer.allocateDirect(TensorHeader.BYTES).order(ByteOrder.nativeOrder());
        TensorHeader.writeInvalid(b.asLongBuffer(), 0, Outgoing.UNSENDABLE);
        return b;
    }

    /** The header in a received header message; throws if the sender marked its tensor unsendable. */
    static TensorHeader readHeader(ByteBuffer message, int src, String context) {
        LongBuffer longs = message.asLongBuffer();
        if (TensorHeader.isInvalid(longs, 0)) {
            throw new CommunicationException(context + ": rank " + src + " passed "
                    + Outgoing.describe(TensorHeader.invalidCode(longs, 0)));
        }
        return TensorHeader.read(longs, 0, context);
    }

    /**
     * Blocking receive. With {@code into}, the message must match its dtype and shape (the
     * payload is drained first, so a mismatch leaves no message behind); without, a new tensor.
     */
    Tensor recv(int src, int tag, Tensor into, String context) throws MPIException {
        // An irecv posted earlier on this (source, tag) gets the earlier message, whose payload
        // was sent first: its payload receive must be posted first, or it would take ours (and a
        // sender blocked on that payload would never send our header).
        RecvHandle earlier = lastReceive.get(key(src, tag));
        if (earlier != null) {
            while (!earlier.postPayload()) { // polled, not blocking under its lock: see RecvHandle.waitFor
                advanceReceives();
                Thread.yield();
            }
        }
        // After the lookup: an earlier receive that failed (and left its payload queued) marks the
        // stream before it leaves the map.
        requireIntact(src, tag, context);
        ByteBuffer buf = HeaderBuffers.receiveBuffer(1);
        headerComm.recv(buf, HeaderBuffers.MESSAGE_BYTES, MPI.BYTE, src, tag);
        TensorHeader h = readHeader(buf, src, context);
        boolean fits = into == null || TensorHeader.isDense(into) && h.matches(into);
        Tensor out = fits && into != null && TensorBytes.isWireReady(into) ? into : allocate(h, src, tag, context);
        if (h.nbytes <= INLINE_BYTES) {
            TensorBytes.copyIn(out, buf, TensorHeader.BYTES, h.nbytes);
        } else {
            recvPayload(out, h.nbytes, src, tag, TensorHeader.chunkBytes(buf.asLongBuffer(), 0, context), context);
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

    /** A tensor for a received header; when there is no memory for it, the stream is broken. */
    private Tensor allocate(TensorHeader h, int src, int tag, String context) {
        try {
            return h.allocate();
        } catch (RuntimeException | Error e) {
            String reason = context + ": could not receive the tensor (" + e + ")";
            if (h.nbytes > INLINE_BYTES) {
                broken(key(src, tag), reason);
            }
            throw new CommunicationException(reason, e);
        }
    }

    private void sendPayload(Tensor data, long nbytes, int dst, int tag, long chunk) throws MPIException {
        for (long off = 0; off < nbytes; off += chunk) {
            int len = (int) Math.min(chunk, nbytes - off);
            payloadComm.send(TensorBytes.wire(data, off, len), len, MPI.BYTE, dst, tag);
        }
    }

    /**
     * Receives a payload in the chunks of its sender's size, {@code chunk}, all posted at once: a
     * paced sender's pieces then cross back to back, each matched as it comes. If a chunk fails,
     * receives still posted write into {@code out} when theirs come: it is kept for good, and the
     * (source, tag) stream is broken.
     */
    private void recvPayload(Tensor out, long nbytes, int src, int tag, long chunk, String context) throws MPIException {
        List<Request> chunks = new ArrayList<>();
        try {
            irecvPayload(out, nbytes, src, tag, chunk, chunks);
            long off = 0;
            for (Request r : chunks) {
                checkChunk(r.waitStatus().getCount(MPI.BYTE), (int) Math.min(chunk, nbytes - off), src);
                off += chunk;
            }
        } catch (MPIException | RuntimeException | Error e) {
            if (!chunks.isEmpty()) {
                InFlight.started(new Object[] {out});
                out.retainReference();
                broken(key(src, tag), context + ": the payload failed partway (" + e + ")");
            }
            throw e;
        }
    }

    /** A shorter chunk than its header announced: not silently. */
    private static void checkChunk(int received, int expected, int src) {
        if (received != expected) {
            throw payloadMismatch("a payload chunk from rank " + src + " has " + received + " bytes where "
                    + expected + " were expected");
        }
    }

    static CommunicationException payloadMismatch(String what) {
        return new CommunicationException(what + ": the payload does not match its header (mismatched"
                + " send/recv pairing, or sends on one (peer, tag) from several threads at once?)");
    }

    private void isendPayload(Tensor data, long nbytes, int dst, int tag, long chunk, List<Request> into)
            throws MPIException {
        isendChunks(data, nbytes, dst, tag, chunk, 0, Integer.MAX_VALUE, into);
    }

    /**
     * Posts up to {@code count} chunks of the payload, starting at byte {@code from} (a chunk
     * boundary); returns the offset of the first byte not posted.
     */
    long isendChunks(Tensor data, long nbytes, int dst, int tag, long chunk, long from, int count, List<Request> into)
            throws MPIException {
        long off = from;
        for (int posted = 0; posted < count && off < nbytes; posted++, off += chunk) {
            int len = (int) Math.min(chunk, nbytes - off);
            into.add(payloadComm.iSend(TensorBytes.wire(data, off, len), len, MPI.BYTE, dst, tag));
        }
        return Math.min(off, nbytes);
    }

    private void irecvPayload(Tensor out, long nbytes, int src, int tag, long chunk, List<Request> into)
            throws MPIException {
        for (long off = 0; off < nbytes; off += chunk) {
            int len = (int) Math.min(chunk, nbytes - off);
            into.add(payloadComm.iRecv(TensorBytes.wire(out, off, len), len, MPI.BYTE, src, tag));
        }
    }

    /**
     * Posts a tensor's header message (with an inline payload) on {@code headerVia} and, if
     * larger, its payload.
     */
    void postSend(Intracomm headerVia, int headerTag, int payloadTag, TensorHeader h, Tensor data,
            ByteBuffer buf, int dst, List<Request> into) throws MPIException {
        long chunk = chunkBytes;
        into.add(headerVia.iSend(buf, packHeader(h, data, buf, chunk), MPI.BYTE, dst, headerTag));
        if (h.nbytes > INLINE_BYTES) {
            isendPayload(data, h.nbytes, dst, payloadTag, chunk, into);
        }
    }

    /**
     * Once a header message is in: copies its inline payload into {@code out}, or posts the
     * payload receive, in the chunks the header names.
     */
    void postReceive(TensorHeader h, Tensor out, ByteBuffer header, int src, int tag, List<Request> into,
            String context) throws MPIException {
        if (h.nbytes <= INLINE_BYTES) {
            TensorBytes.copyIn(out, header, TensorHeader.BYTES, h.nbytes);
        } else {
            irecvPayload(out, h.nbytes, src, tag, TensorHeader.chunkBytes(header.asLongBuffer(), 0, context), into);
        }
    }

    SendHandle isend(Tensor data, TensorHeader h, int dst, int tag, String context) throws MPIException {
        requireSendable(dst, tag, context);
        postPacedBefore(dst, tag);
        ByteBuffer buf = HeaderBuffers.take();
        List<Request> requests = new ArrayList<>();
        PacedPayload paced = null;
        try {
            if (PacedPayload.applies(h.nbytes, members.worldRank(dst))) {
                long piece = Math.min(chunkBytes, PacedPayload.PIECE_BYTES);
                requests.add(headerComm.iSend(buf, packHeader(h, data, buf, piece), MPI.BYTE, dst, tag));
                paced = new PacedPayload(this, data, h.nbytes, dst, tag, piece);
                paced.topUp(requests);
            } else {
                postSend(headerComm, tag, tag, h, data, buf, dst, requests);
            }
        } catch (MPIException | RuntimeException | Error e) {
            if (requests.isEmpty()) {
                HeaderBuffers.give(buf);
            } else {
                // MPI reads what was posted until the peer receives it, which may never happen:
                // the tensor and header are kept for good, as those of an MPI send never completed,
                // and the peer's receive of this message waits for chunks that will not come.
                InFlight.started(new Object[] {data, buf});
                data.retainReference(); // the caller releases its hold on failure
                brokenSend(key(dst, tag), context + " failed after part of the message was posted (" + e + ")");
            }
            throw e;
        }
        SendHandle handle = new SendHandle(requests, data, buf, h.nbytes, context, members, dst, tag, paced);
        if (paced != null) {
            synchronized (handle) { // the progress thread may post the last piece meanwhile: then it stays out
                if (paced.unposted()) {
                    pacedSends.put(key(dst, tag), handle);
                }
            }
        }
        return handle;
    }

    /**
     * Posts what remains of the last paced send to (destination, tag): a message posted after it
     * must not have its payload matched first by the receives of that send's remaining pieces.
     */
    private void postPacedBefore(int dst, int tag) throws MPIException {
        SendHandle earlier = pacedSends.remove(key(dst, tag));
        if (earlier != null) {
            earlier.postRemaining();
        }
    }

    /** The paced send {@code handle} has posted its whole payload. */
    void pacedSendPosted(int dst, int tag, SendHandle handle) {
        pacedSends.remove(key(dst, tag), handle);
    }

    /** A paced send to (destination, tag) failed after posting part of its payload. */
    void pacedSendBroken(int dst, int tag, String reason) {
        brokenSend(key(dst, tag), reason);
    }

    /** Posts a nonblocking receive; {@code onComplete} gets the payload bytes once it has arrived. */
    RecvHandle irecv(int src, int tag, String context, LongConsumer onComplete) throws MPIException {
        requireIntact(src, tag, context);
        ByteBuffer buf = HeaderBuffers.take();
        Request headerRequest = headerComm.iRecv(buf, HeaderBuffers.MESSAGE_BYTES, MPI.BYTE, src, tag);
        // Made with its predecessor, inside the map's update: the progress thread may sweep it the
        // moment it is in the map, and without its predecessor it would post its payload receive
        // first, which would then take the earlier message's payload (a shorter receive than its
        // message, into which Open MPI 4.1 may write past the end).
        RecvHandle handle = lastReceive.compute(key(src, tag),
                (key, earlier) -> new RecvHandle(this, key, src, tag, buf, headerRequest, earlier, context, onComplete));
        progress.wake();
        return handle;
    }

    /** Tries once, without waiting, to post the payload receives whose headers are in. */
    void advanceReceives() {
        ReceiveProgress.sweep(lastReceive.values());
    }

    /** The stream of (source, tag) lost its order: its later receives would take the wrong payloads. */
    void broken(long key, String reason) {
        broken.putIfAbsent(key, reason); // the first failure is the cause
    }

    /** A message to (destination, tag) was cut short: later ones would feed its receive's leftover chunks. */
    private void brokenSend(long key, String reason) {
        brokenSends.putIfAbsent(key, reason);
    }

    private void requireIntact(int src, int tag, String context) {
        requireIntact(key(src, tag), context);
    }

    /** Throws if the stream of this (source, tag) key is broken. */
    void requireIntact(long key, String context) {
        requireIntact(broken, key, "receive from", "get the payload left queued", context);
    }

    private void requireSendable(int dst, int tag, String context) {
        requireIntact(brokenSends, key(dst, tag), "send to", "meet the peer's receive of that message", context);
    }

    private static void requireIntact(Map<Long, String> streams, long key, String earlier, String consequence,
            String context) {
        String reason = streams.get(key);
        if (reason != null) {
            throw new CommunicationException(context + ": an earlier " + earlier + " rank " + (int) (key >>> 32)
                    + " with tag " + (int) key + " failed partway, so this one would " + consequence + " (" + reason
                    + ")");
        }
    }

    /** Stops the thread that advances nonblocking receives (the communicator is closing). */
    void close() {
        progress.close();
    }

    private static long key(int src, int tag) {
        return ((long) src << 32) | (tag & 0xffffffffL);
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
