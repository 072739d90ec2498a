package io.mn4j.communicator;

import java.util.Collection;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A daemon thread that posts the payload receives of nonblocking receives whose headers have
 * arrived while no thread is testing or waiting on them: without it, correct MPI programs (post a
 * receive, take part in a collective, then wait) would hang, since a large payload's sender waits
 * until its receive is posted. It sleeps while no receive waits and backs off (0.2 to 2 ms) while
 * nothing arrives; without THREAD_MULTIPLE, or with {@code -Dmn4j.receiveProgress=false}, there is
 * no such thread and receives advance only in test() and waitFor().
 */
final class ReceiveProgress {
    private static final Logger LOG = LoggerFactory.getLogger(ReceiveProgress.class);
    /** Pause between sweeps while nothing arrives: doubles from the first to the last. */
    private static final long FIRST_PAUSE_NANOS = TimeUnit.MICROSECONDS.toNanos(200);
    private static final long LAST_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(2);

    /** {@code -Dmn4j.receiveProgress=false}: no thread; receives advance in test() and waitFor() only. */
    static final boolean ENABLED = !"false".equals(System.getProperty("mn4j.receiveProgress"));

    private final Supplier<Collection<RecvHandle>> waiting;
    private final String name;
    private Thread thread;
    private volatile boolean closed;
    /** The thread sleeps until woken (no receive was waiting); else it is sweeping or pausing. */
    private volatile boolean idle;

    /** {@code waiting}: the receives to sweep (each posts its predecessors' payloads first). */
    ReceiveProgress(Supplier<Collection<RecvHandle>> waiting, String name) {
        this.waiting = waiting;
        this.name = name;
    }

    /** A receive was posted: make sure it is swept. */
    synchronized void wake() {
        if (closed || !ENABLED || !MpiJob.threadMultiple()) {
            return;
        }
        if (thread == null) {
            thread = new Thread(this::run, name);
            thread.setDaemon(true);
            thread.start();
        }
        // A sweeping or pausing thread finds the new receive by itself: waking it for every
        // receive took the core from the ranks' own threads (GCN epochs 10-25 % slower on 2 cores).
        if (idle) {
            LockSupport.unpark(thread);
        }
    }

    /** Stops the sweeps (the communicator is closing); returns once none is running. */
    void close() {
        Thread t;
        synchronized (this) {
            closed = true;
            t = thread;
        }
        if (t == null) {
            return;
        }
        LockSupport.unpark(t);
        // Not cut short by an interrupt: the communicator is freed next, and the thread may be in
        // an MPI call on it.
        boolean interrupted = false;
        while (t.isAlive()) {
            try {
                t.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private void run() {
        long pause = FIRST_PAUSE_NANOS;
        while (!closed) {
            Collection<RecvHandle> receives = waiting.get();
            if (receives.isEmpty()) {
                idle = true;
                // A receive posted between the check and here: wake() saw idle and unparked.
                if (waiting.get().isEmpty()) {
                    LockSupport.park(this); // a permit given before park is kept
                }
                idle = false;
                pause = FIRST_PAUSE_NANOS;
                continue;
            }
            boolean[] posted = {false};
            if (!MpiJob.unlessFinished(() -> posted[0] = sweep(receives))) {
                return;
            }
            if (!posted[0]) {
                LockSupport.parkNanos(this, pause);
                pause = Math.min(2 * pause, LAST_PAUSE_NANOS);
            } else {
                pause = FIRST_PAUSE_NANOS;
            }
        }
    }

    /** Tries every receive once, without waiting; true if one posted its payload. */
    static boolean sweep(Collection<RecvHandle> receives) {
        boolean posted = false;
        for (RecvHandle r : receives.toArray(new RecvHandle[0])) {
            try {
                posted |= r.postPayload();
            } catch (Exception | Error e) {
                // The receive's own test() or waitFor() meets the problem again and reports it;
                // thrown on, it would end the progress thread (and, uncaught, the job).
                LOG.debug("receive progress: {}", e.toString());
            }
        }
        return posted;
    }
}
