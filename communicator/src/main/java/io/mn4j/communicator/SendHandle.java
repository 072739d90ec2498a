package io.mn4j.communicator;

import java.nio.ByteBuffer;
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
 * an MPI call; poll with {@link #test()} or wait.
 */
public final class SendHandle {
    private final List<Request> requests;
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
            int dst, int tag) {
        this.requests = requests;
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
        try {
            for (Request r : requests) {
                if (!r.test()) {
                    return false;
                }
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
        long t0 = System.nanoTime();
        MpiCalls.enter("waitFor", context, members, dst, tag);
        try {
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
