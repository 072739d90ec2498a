package io.mn4j.communicator;

import java.nio.ByteBuffer;
import java.util.Iterator;
import java.util.List;
import mpi.MPIException;
import mpi.Request;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;

/**
 * A nonblocking tensor send in flight. The tensor's memory is read by MPI until
 * {@link #waitFor()} returns (or {@link #test()} says true): the handle holds a reference of its
 * own until then, which no {@link PointerScope} releases (so a send must be
 * completed, by waiting or testing until true: one dropped before keeps its tensor for good).
 * Debian's Open MPI has no progress thread, so a transfer advances only while some thread is in
 * an MPI call; poll with {@link #test()} or wait. A large send to another host posts its payload
 * in pieces ({@link PacedPayload}), as earlier ones complete.
 */
public final class SendHandle {
    /** The requests posted and not yet seen complete, oldest first. */
    private final List<Request> requests;
    /** The pieces still to post, for a paced send; null otherwise. */
    private final PacedPayload paced;
    /** Why a piece could not be posted; thrown by every later test and wait. */
    private CommunicationException failure;
    private Tensor data;
    private ByteBuffer header;
    private final long bytes;
    /** The call, its ranks and tag, for errors. */
    private final String context;
    /** The communicator, destination and tag, for the watchdog. */
    private final Members members;
    private final int dst;
    private final int tag;
    private boolean done;
    /** Where {@link #waitFor()} counts the time it blocks, or null. */
    private CommStats waits;

    /** {@code data}: held ({@link HeldTensors}); released when the send completes. */
    SendHandle(List<Request> requests, Tensor data, ByteBuffer header, long bytes, String context, Members members,
            int dst, int tag, PacedPayload paced) {
        this.requests = requests;
        this.paced = paced;
        this.members = members;
        this.dst = dst;
        this.tag = tag;
        this.data = data;
        this.header = header;
        this.bytes = bytes;
        this.context = context;
        InFlight.started(this);
    }

    /** Payload bytes of this send. */
    public long bytes() {
        return bytes;
    }

    /** True once the send has completed; never blocks. */
    public boolean test() {
        MpiCalls.enter(); // MPI is not finalized under a thread polling this
        try {
            return advance();
        } finally {
            MpiCalls.leave();
        }
    }

    private synchronized boolean advance() {
        if (done) {
            return true;
        }
        throwIfFailed();
        try {
            for (Iterator<Request> it = requests.iterator(); it.hasNext(); ) {
                if (!it.next().test()) {
                    break; // in order: a later piece completes after an earlier one
                }
                it.remove();
            }
            if (paced != null && paced.unposted()) {
                post(false);
                return false;
            }
            if (!requests.isEmpty()) {
                return false;
            }
        } catch (MPIException e) {
            throw new CommunicationException(context + ": " + e.getMessage(), e);
        }
        release();
        return true;
    }

    /** Blocks until the send has completed. */
    public synchronized void waitFor() {
        if (done) {
            return;
        }
        throwIfFailed();
        long t0 = System.nanoTime();
        MpiCalls.enter("waitFor", context, members, dst, tag);
        try {
            while (paced != null && paced.unposted()) {
                requests.remove(0).waitFor();
                post(false);
            }
            Wire.waitAll(requests);
        } catch (MPIException e) {
            throw new CommunicationException(context + ": " + e.getMessage(), e);
        } finally {
            MpiCalls.leaveWatched();
            if (waits != null) {
                waits.record(CommStats.WAIT, 0, 0, t0);
            }
        }
        release();
    }

    /** Posts every piece not yet posted: a later message to the same peer and tag is about to be. */
    synchronized void postRemaining() throws MPIException {
        if (!done && failure == null && paced != null && paced.unposted()) {
            post(true);
        }
    }

    /**
     * Posts more pieces (all of them, or up to the pacing depth). If that fails, part of the
     * message is posted and its receiver waits for the rest: the tensor and header stay with MPI
     * for good, and the peer and tag refuse later sends.
     */
    private void post(boolean all) throws MPIException {
        try {
            if (all) {
                paced.postAll(requests);
            } else {
                paced.topUp(requests);
            }
        } catch (MPIException | RuntimeException | Error e) {
            failure = new CommunicationException(context + " failed after part of its payload was posted (" + e + ")", e);
            paced.broken(failure.getMessage());
            InFlight.started(new Object[] {data, header});
            InFlight.completed(this);
            throw failure;
        }
        if (!paced.unposted()) {
            paced.posted(this);
        }
    }

    private void throwIfFailed() {
        if (failure != null) {
            throw failure;
        }
    }

    /** Counts the time {@link #waitFor()} blocks in {@code stats}, as {@link CommStats#WAIT}. */
    synchronized void countWaitsIn(CommStats stats) {
        waits = stats;
    }

    private void release() {
        done = true;
        HeldTensors.release(data); // frees a copy made for this send (of a strided or GPU tensor)
        data = null;
        HeaderBuffers.give(header);
        header = null;
        InFlight.completed(this);
    }
}
