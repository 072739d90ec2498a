package io.mn4j.communicator;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A daemon thread that keeps nonblocking sends and receives moving while the program computes.
 * Open MPI as Debian builds it has no asynchronous progress: over TCP a large message moves only
 * while some thread of each rank is inside MPI (the receiver must answer the sender's
 * rendezvous, the sender must refill its socket), so a transfer posted before a computation
 * otherwise waits for the computation to end. While any {@link SendHandle} or {@link RecvHandle}
 * is in flight, this thread tests them every {@value #DEFAULT_MICROS} µs
 * ({@code -Dmn4j.transferProgressMicros}); each test runs MPI's progress engine for every
 * transfer of the process. It sleeps while none is in flight. It runs in jobs that span several
 * hosts ({@code -Dmn4j.transferProgress=auto}, the default): within a host, ranks usually have a
 * core each and a transfer is a copy that some core must make anyway. {@code true} runs it on one
 * host too, {@code false} never; a job without THREAD_MULTIPLE has no such thread.
 */
final class TransferProgress {
    private static final Logger LOG = LoggerFactory.getLogger(TransferProgress.class);
    static final long DEFAULT_MICROS = 100;
    private static final String SETTING = System.getProperty("mn4j.transferProgress", "auto");
    private static volatile boolean enabled = SETTING.equals("true");
    private static final long PAUSE_NANOS = TimeUnit.MICROSECONDS.toNanos(Long.getLong("mn4j.transferProgressMicros", DEFAULT_MICROS));

    private static Thread thread;
    /** The thread sleeps until woken (nothing was in flight). */
    private static volatile boolean idle;

    private TransferProgress() {
    }

    /**
     * Called once the world communicator knows how many hosts the job spans: under the default
     * setting, transfers are kept moving when there are several.
     */
    static void configure(int hosts) {
        if (!SETTING.equals("true") && !SETTING.equals("false") && !SETTING.equals("auto")) {
            throw new IllegalArgumentException("-Dmn4j.transferProgress must be auto, true or false, got " + SETTING);
        }
        enabled = SETTING.equals("true") || SETTING.equals("auto") && hosts > 1;
    }

    /** Whether the thread runs in this job (it starts with the first transfer). */
    static boolean running() {
        return enabled && MpiJob.threadMultiple();
    }

    /** A transfer was started: make sure it is tested. */
    static synchronized void wake() {
        if (!running()) {
            return;
        }
        if (thread == null) {
            thread = new Thread(TransferProgress::run, "mn4j-transfer-progress");
            thread.setDaemon(true);
            thread.start();
        }
        if (idle) {
            LockSupport.unpark(thread);
        }
    }

    private static void run() {
        while (true) {
            Object[] transfers = InFlight.handles();
            if (transfers.length == 0) {
                idle = true;
                // A transfer started between the check and here: wake() saw idle and unparked.
                if (InFlight.handles().length == 0) {
                    LockSupport.park(TransferProgress.class);
                }
                idle = false;
                continue;
            }
            // Counted as a call in progress, so MPI is not finalized under it; ends with the job.
            if (!MpiCalls.enterUnlessEnding()) {
                return;
            }
            try {
                testAll(transfers);
            } finally {
                MpiCalls.leave();
            }
            LockSupport.parkNanos(TransferProgress.class, PAUSE_NANOS);
        }
    }

    private static void testAll(Object[] transfers) {
        for (Object t : transfers) {
            try {
                if (t instanceof SendHandle s) {
                    s.test();
                } else if (t instanceof RecvHandle r) {
                    r.test();
                }
            } catch (Exception | Error e) {
                // The handle's own test() or waitFor() meets the problem again and reports it.
                LOG.debug("transfer progress: {}", e.toString());
            }
        }
    }
}
