package io.mn4j.communicator;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongConsumer;
import mpi.MPI;
import mpi.MPIException;
import mpi.Request;
import mpi.Status;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;

/**
 * A nonblocking tensor receive in flight. The header arrives first; only then can the payload
 * receive be posted (its size is in the header). A thread of the communicator posts it when the
 * header is in ({@link ReceiveProgress}), so the program may do anything meanwhile — other
 * receives, collectives — as with MPI's own nonblocking receives; {@link #test()} and
 * {@link #waitFor()} post it too. Receives from the same (source, tag) complete in the order
 * they were posted, whatever order they are tested in, and blocking receives on that pair come
 * after them. One that fails once its header is in (no memory for the tensor, say) leaves its
 * payload queued: the later receives from that source and tag then throw, naming that failure,
 * rather than take it.
 *
 * <p>The received tensor belongs to no {@link PointerScope} while MPI writes
 * it; {@link #waitFor()} or {@link #get()} hands it to the scope open at that call, as if it had
 * been made there. A receive is completed by waiting or testing until true: one dropped before
 * keeps its tensor for good, as an MPI request never completed does.
 */
public final class RecvHandle {
    private final Wire wire;
    private final long key;
    private final int src;
    private final int tag;
    private final String context;
    private final LongConsumer onComplete;
    private ByteBuffer header;
    private Request headerRequest;
    /** The earlier receive from this source and tag whose payload receive must be posted first. */
    private RecvHandle predecessor;
    private List<Request> payload;
    /** Set once {@link #payload} is: read without the lock by later receives of this pair. */
    private volatile boolean payloadPosted;
    private Tensor out;
    private boolean handedOver;
    private long bytes;
    /** Payload requests completed so far, in order, and the bytes they brought. */
    private int completed;
    private long received;
    private boolean done;
    /** Why the sender sent no tensor (its header said so); thrown by test() and waitFor(). */
    private CommunicationException failure;
    /** Where {@link #waitFor()} counts the time it blocks, or null. */
    private volatile CommStats waits;

    RecvHandle(Wire wire, long key, int src, int tag, ByteBuffer header, Request headerRequest,
            RecvHandle predecessor, String context, LongConsumer onComplete) {
        this.wire = wire;
        this.key = key;
        this.src = src;
        this.tag = tag;
        this.header = header;
        this.headerRequest = headerRequest;
        this.predecessor = predecessor;
        this.context = context;
        this.onComplete = onComplete;
    }

    /** Payload bytes received; known once {@link #test()} has returned true. */
    public synchronized long bytes() {
        return bytes;
    }

    /**
     * True once the tensor has arrived. Never waits for the message; it may wait for a call on
     * this handle that another thread is making.
     *
     * @throws CommunicationException if the sender sent no tensor (naming why), or the receive failed
     */
    public boolean test() {
        MpiCalls.enter();
        try {
            return advance();
        } finally {
            MpiCalls.leave();
        }
    }

    /**
     * Blocks until the tensor has arrived and returns it. Holds no lock while it waits (it polls),
     * so that other threads, the communicator's among them, can advance other receives meanwhile:
     * a receive posted earlier may be what the sender of this one waits on.
     */
    public Tensor waitFor() {
        long t0 = System.nanoTime();
        MpiCalls.enter("waitFor", context, wire.members(), src, tag);
        try {
            while (!advance()) {
                wire.advanceReceives();
                Thread.yield(); // as Open MPI's waits do when ranks share cores
            }
            synchronized (this) {
                return handOver();
            }
        } finally {
            MpiCalls.leaveWatched();
            CommStats w = waits;
            if (w != null) {
                w.record(CommStats.WAIT, 0, 0, t0);
            }
        }
    }

    /** Counts the time {@link #waitFor()} blocks in {@code stats}, as {@link CommStats#WAIT}. */
    void countWaitsIn(CommStats stats) {
        waits = stats;
    }

    /** One step of the receive, without waiting: true once the tensor has arrived. */
    private synchronized boolean advance() {
        try {
            if (done) {
                return true;
            }
            if (!postPayload()) {
                return false;
            }
            throwIfFailed();
            // In order: chunks from one (source, tag) arrive in the order they were sent.
            for (; completed < payload.size(); completed++) {
                Status s = payload.get(completed).testStatus();
                if (s == null) {
                    return false;
                }
                received += s.getCount(MPI.BYTE);
            }
            finish();
            return true;
        } catch (MPIException e) {
            throw new CommunicationException(context + ": " + e.getMessage(), e);
        }
    }

    /** The received tensor; only after {@link #test()} returned true or {@link #waitFor()}. */
    public synchronized Tensor get() {
        throwIfFailed();
        if (!done) {
            throw new IllegalStateException(context + ": the receive has not completed yet");
        }
        return handOver();
    }

    private Tensor handOver() {
        if (!handedOver) {
            handedOver = true;
            out = HeldTensors.handOver(out);
        }
        return out;
    }

    /**
     * Posts the payload receive if the header is in, after those of the earlier receives from
     * this source and tag; never waits. True once it is posted, or the receive has failed.
     */
    boolean postPayload() throws MPIException {
        if (payloadPosted) {
            return true;
        }
        RecvHandle before = predecessor();
        if (before == null || before.payloadPosted) { // the usual case: nothing to walk
            return postOwnPayload();
        }
        // Oldest first, walked rather than recursed: thousands of receives may wait on one pair.
        ArrayDeque<RecvHandle> unposted = new ArrayDeque<>();
        for (RecvHandle h = this; h != null && !h.payloadPosted; h = h.predecessor()) {
            unposted.push(h);
        }
        while (!unposted.isEmpty()) {
            if (!unposted.pop().postOwnPayload()) {
                return false;
            }
        }
        return true;
    }

    private synchronized RecvHandle predecessor() {
        return predecessor;
    }

    /** Posts this receive's payload receive once its predecessor's is posted and its header is in. */
    private synchronized boolean postOwnPayload() throws MPIException {
        if (payload != null) {
            return true;
        }
        if (predecessor != null) {
            if (!predecessor.payloadPosted) {
                return false;
            }
            predecessor = null;
        }
        if (!headerRequest.test()) {
            return false;
        }
        List<Request> posted = new ArrayList<>();
        headerRequest = null;
        boolean ok = false;
        try {
            TensorHeader h = Wire.readHeader(header, src, context);
            bytes = h.nbytes;
            // An earlier receive of this pair left its payload queued: ours would take it.
            wire.requireIntact(key, context);
            out = HeldTensors.make(h::allocate);
            wire.postReceive(h, out, header, src, tag, posted, context);
            ok = true;
        } catch (CommunicationException e) {
            failed(e, posted);
        } catch (MPIException | RuntimeException | Error e) {
            // No memory for the tensor, say.
            failed(new CommunicationException(context + ": could not receive the tensor (" + e + ")", e), posted);
        } finally {
            // Whatever failed, even the handling of a failure: the receive ends here, and the later
            // ones of this pair go on.
            if (!ok && failure == null) {
                failure = new CommunicationException(context + ": could not receive the tensor");
            }
            if (!posted.isEmpty()) {
                InFlight.started(this); // MPI writes into out until the chunks complete
            }
            payload = posted;
            HeaderBuffers.give(header);
            header = null;
            payloadPosted = true;
            wire.posted(key, this);
        }
        return true;
    }

    /**
     * The receive failed after its header came in. Unless the payload was inline or never sent
     * (an unsendable mark), it stays queued, at least in part, and would be taken by the next
     * receive from this source and tag, so the wire refuses those from now on. A tensor that chunk
     * receives already write into is kept for good ({@link InFlight}), as the memory of an MPI
     * receive never completed; any other is freed.
     */
    private void failed(CommunicationException e, List<Request> postedChunks) {
        failure = e;
        if (bytes > Wire.INLINE_BYTES) {
            wire.broken(key, e.getMessage());
        }
        if (out != null && postedChunks.isEmpty()) {
            HeldTensors.release(out);
            out = null;
        }
    }

    private void throwIfFailed() {
        if (failure != null) {
            throw failure;
        }
    }

    private void finish() {
        InFlight.completed(this); // every chunk is in
        if (!payload.isEmpty() && received != bytes) { // else the payload was inline
            failure = Wire.payloadMismatch(context + ": received " + received + " of the " + bytes + " payload bytes");
            HeldTensors.release(out); // its data is incomplete: nobody gets it
            out = null;
            throw failure;
        }
        done = true;
        payload = List.of();
        onComplete.accept(bytes);
    }
}
