package io.mn4j.communicator;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The communicator call one thread is inside, if any, and what it waits for: written by that
 * thread as the call starts and ends, read by the {@link Watchdog}. The thread writes the fields
 * and then, with release semantics, the call's number, so that a reader that sees the same number
 * before and after reading the fields has read that call's fields. No clock is read on the calling thread
 * (System.nanoTime() cost 65 ns a call on the project's VM): the watchdog dates a call from the
 * first check that sees it, up to one of its ticks late.
 */
final class OpenCall {
    /** {@link #peer} of a collective. */
    static final int COLLECTIVE = -1;
    /** {@link #tag} of a call without one. */
    static final int NO_TAG = -1;

    final Thread thread;
    /** Calls inside calls: only the outermost is recorded. Touched by the owning thread only. */
    private int depth;
    private String op;
    /** A nonblocking transfer's own description (its handle's), or null. */
    private String transfer;
    private Members members;
    private int peer;
    private int tag;
    private long collective;
    /** Calls started by the thread so far (only the thread writes it). */
    private long calls;
    /** The number of the call in progress; 0 while the thread is in none. */
    private volatile long current;
    /** The call the watchdog last saw in progress, and when it first saw it (System.nanoTime()). */
    private long seenCall;
    private long seenAt;
    private static final VarHandle CURRENT;

    static {
        try {
            CURRENT = MethodHandles.lookup().findVarHandle(OpenCall.class, "current", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    OpenCall(Thread thread) {
        this.thread = thread;
    }

    /** A call starts on the owning thread; {@code peer} is a rank of {@code members}, or {@link #COLLECTIVE}. */
    void start(String op, String transfer, Members members, int peer, int tag) {
        if (depth++ > 0) {
            return;
        }
        this.op = op;
        this.transfer = transfer;
        this.members = members;
        this.peer = peer;
        this.tag = tag;
        this.collective = peer == COLLECTIVE && members != null ? members.startCollective() : 0;
        CURRENT.setRelease(this, ++calls);
    }

    void end() {
        if (--depth == 0) {
            // A release store, not a volatile one (a fence on x86): the next call's stores may be
            // seen before it, but a call is reported only once its number has stayed for the
            // whole timeout, and by then its fields have too.
            CURRENT.setRelease(this, 0L);
        }
    }

    boolean idle() {
        return current == 0;
    }

    /**
     * What the thread is inside, read consistently, dated from the first read that saw this call
     * ({@code now} if this is it); null when it is in no call.
     */
    Snapshot read(long now) {
        long call = current;
        if (call == 0) {
            return null;
        }
        String o = op;
        String t = transfer;
        Members m = members;
        int p = peer;
        int g = tag;
        long c = collective;
        VarHandle.loadLoadFence(); // the fields above are read before the number is read again
        if (current != call) {
            return null;
        }
        synchronized (this) { // the watchdog and, at the JVM's exit, a shutdown hook read
            if (seenCall != call) {
                seenCall = call;
                seenAt = now;
            }
            return new Snapshot(thread, o, t, m, p, g, c, seenAt);
        }
    }

    /** One call in progress, as the watchdog saw it. */
    record Snapshot(Thread thread, String op, String transfer, Members members, int peer, int tag, long collective, long since) {

        double seconds(long now) {
            // A call may start after the caller read the clock: never "-0.0 s".
            return Math.max(0, now - since) / 1e9;
        }

        boolean isCollective() {
            return peer == COLLECTIVE && members != null;
        }

        /** The peer's world rank, or -1 for a collective (or a call without members). */
        int peerWorldRank() {
            return peer == COLLECTIVE || members == null ? -1 : members.worldRank(peer);
        }

        /** "allreduce on the world communicator (its collective call 12)", "recv (rank 1 from rank 0, tag 7)". */
        String describe() {
            if (members == null) {
                return op;
            }
            String on = Members.WORLD.equals(members.id) ? "" : " on " + members.describe();
            if (transfer != null) {
                return "waitFor of " + transfer + on;
            }
            if (peer == COLLECTIVE) {
                return op + " on " + members.describe() + " (its collective call " + collective + ")";
            }
            return CheckedPointToPoint.describeCall(op, members.rank(), peer, tag) + on;
        }
    }
}
