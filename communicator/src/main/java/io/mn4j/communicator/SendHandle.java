package io.mn4j.communicator;

import java.nio.ByteBuffer;
import java.util.List;
import mpi.MPIException;
import mpi.Request;
import org.bytedeco.pytorch.Tensor;

/**
 * A nonblocking tensor send in flight. The tensor's memory is read by MPI until
 * {@link #waitFor()} returns (or {@link #test()} says true): the handle keeps it alive until then.
 * Debian's Open MPI has no progress thread, so a transfer advances only while some thread is in
 * an MPI call; poll with {@link #test()} or wait.
 */
public final class SendHandle {
    private final List<Request> requests;
    private Tensor data;
    private ByteBuffer header;
    private final long bytes;
    private boolean done;
    /** True when {@link #data} is a contiguous copy made for this send, freed once it completes. */
    private boolean ownsData;

    SendHandle(List<Request> requests, Tensor data, ByteBuffer header, long bytes) {
        this.requests = requests;
        this.data = data;
        this.header = header;
        this.bytes = bytes;
    }

    /**
     * Makes the handle free its tensor once the send completes: the tensor is a copy made only for
     * this send (of a strided or GPU tensor), which would otherwise wait for the caller's
     * PointerScope or the garbage collector.
     */
    void ownData() {
        ownsData = true;
    }

    /** Payload bytes of this send. */
    public long bytes() {
        return bytes;
    }

    /** True once the send has completed; never blocks. */
    public synchronized boolean test() {
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
            throw new CommunicationException("isend: " + e.getMessage(), e);
        }
        release();
        return true;
    }

    /** Blocks until the send has completed. */
    public synchronized void waitFor() {
        if (done) {
            return;
        }
        MpiJob.enteringMpi();
        try {
            Wire.waitAll(requests);
        } catch (MPIException e) {
            throw new CommunicationException("isend: " + e.getMessage(), e);
        } finally {
            MpiJob.leftMpi();
        }
        release();
    }

    private void release() {
        done = true;
        if (ownsData) {
            data.close();
        }
        data = null;
        HeaderBuffers.give(header);
        header = null;
    }
}
