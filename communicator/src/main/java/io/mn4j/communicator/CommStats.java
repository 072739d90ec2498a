package io.mn4j.communicator;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Per-operation counters of a {@link Communicator}: calls, payload bytes sent and received, and
 * seconds spent inside the operation. Readable by programs (benchmarks, training logs) and logged
 * at debug level per call.
 */
public final class CommStats {
    /**
     * The operation under which {@code waitFor()} of nonblocking sends and receives counts the
     * time it blocks (calls and seconds; their bytes count under {@code isend} and {@code irecv}).
     */
    public static final String WAIT = "wait";

    private static final Logger LOG = LoggerFactory.getLogger(CommStats.class);

    /** An immutable reading of one operation's counters. */
    public record OpStats(long calls, long bytesSent, long bytesReceived, double seconds) {
    }

    private static final class Counter {
        final AtomicLong calls = new AtomicLong();
        final AtomicLong sent = new AtomicLong();
        final AtomicLong received = new AtomicLong();
        final AtomicLong nanos = new AtomicLong();
    }

    private final Map<String, Counter> counters = new ConcurrentHashMap<>();
    private final int rank;

    CommStats(int rank) {
        this.rank = rank;
    }

    void record(String op, long bytesSent, long bytesReceived, long startNanos) {
        long nanos = System.nanoTime() - startNanos;
        Counter c = counters.computeIfAbsent(op, k -> new Counter());
        c.calls.incrementAndGet();
        c.sent.addAndGet(bytesSent);
        c.received.addAndGet(bytesReceived);
        c.nanos.addAndGet(nanos);
        if (LOG.isDebugEnabled()) {
            LOG.debug("rank {} {}: sent {} B, received {} B, {} us", rank, op, bytesSent,
                    bytesReceived, nanos / 1000);
        }
    }

    /** Adds bytes received by an operation that completes after its call returned (irecv). */
    void addReceived(String op, long bytes) {
        counters.computeIfAbsent(op, k -> new Counter()).received.addAndGet(bytes);
    }

    /** A reading of every operation's counters, by operation name. */
    public Map<String, OpStats> snapshot() {
        Map<String, OpStats> out = new TreeMap<>();
        counters.forEach((op, c) -> out.put(op, new OpStats(c.calls.get(), c.sent.get(),
                c.received.get(), c.nanos.get() / 1e9)));
        return out;
    }

    /** Total payload bytes sent by all operations. */
    public long totalBytesSent() {
        return counters.values().stream().mapToLong(c -> c.sent.get()).sum();
    }

    /** Total payload bytes received by all operations. */
    public long totalBytesReceived() {
        return counters.values().stream().mapToLong(c -> c.received.get()).sum();
    }

    /**
     * Sets every counter back to zero. An operation that another thread is in the middle of may
     * be counted after the reset, or not at all.
     */
    public void reset() {
        counters.clear();
    }
}
