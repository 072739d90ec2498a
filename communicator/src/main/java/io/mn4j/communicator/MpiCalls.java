package io.mn4j.communicator;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import mpi.MPIException;

/**
 * The communicator calls in progress on any thread of this process. Every communicator operation
 * and every wait on a nonblocking handle enters here, so that the end of the job can wait for
 * them (MPI finalized under a thread inside it crashes the rank) and refuse new ones, and so that
 * the {@link Watchdog} sees what each thread waits for and since when ({@link OpenCall}).
 */
final class MpiCalls {
    private static final AtomicInteger inProgress = new AtomicInteger();
    /** Every thread's record, made on its first call; the watchdog drops those of ended threads. */
    private static final List<OpenCall> CALLS = new CopyOnWriteArrayList<>();
    private static final ThreadLocal<OpenCall> MINE = ThreadLocal.withInitial(() -> {
        OpenCall c = new OpenCall(Thread.currentThread());
        CALLS.add(c);
        return c;
    });
    /** Set once the job is ending: the exception message of a call that starts too late. */
    private static volatile String refusal;

    private MpiCalls() {
    }

    /** MPI calls of one operation. */
    @FunctionalInterface
    interface MpiAction<T> {
        T run() throws MPIException;
    }

    /**
     * Runs {@code action} as a call in progress, MPI errors as {@link CommunicationException}s:
     * {@code op} on {@code members} with rank {@code peer} and {@code tag}, or with
     * {@link OpenCall#COLLECTIVE} and {@link OpenCall#NO_TAG} for a collective.
     */
    static <T> T run(String op, Members members, int peer, int tag, MpiAction<T> action) {
        enter(op, null, members, peer, tag);
        try {
            return action.run();
        } catch (MPIException e) {
            throw new CommunicationException(op + ": MPI error: " + e.getMessage(), e);
        } finally {
            leaveWatched();
        }
    }

    /**
     * {@link #enter()} for a call that may wait on other ranks: {@code transfer}, when not null,
     * describes the nonblocking transfer it waits on; the rest as in {@link #run}.
     */
    static void enter(String op, String transfer, Members members, int peer, int tag) {
        enter();
        MINE.get().start(op, transfer, members, peer, tag);
    }

    /** Ends a call entered with {@link #enter(String, String, Members, int, int)}. */
    static void leaveWatched() {
        MINE.get().end();
        leave();
    }

    /** The calls in progress on every thread, each read consistently; drops records of ended threads. */
    static List<OpenCall.Snapshot> open() {
        List<OpenCall.Snapshot> open = new ArrayList<>();
        long now = System.nanoTime();
        for (OpenCall c : CALLS) {
            OpenCall.Snapshot s = c.read(now);
            if (s != null) {
                open.add(s);
            } else if (!c.thread.isAlive() && c.idle()) {
                CALLS.remove(c);
            }
        }
        return open;
    }

    /**
     * Marks a call as started; {@link #leave} marks its end. Throws, having marked nothing, once
     * the job is ending: the count is raised before the flag is read, and {@link #refuseNew} sets
     * the flag before its caller reads the count, so a call either is waited for or is refused.
     */
    static void enter() {
        if (!enterUnlessEnding()) {
            throw new IllegalStateException(refusal);
        }
    }

    /**
     * {@link #enter} for work that has nothing to do once the job is ending (freeing MPI objects,
     * which finalization frees anyway): false, having marked nothing, instead of throwing.
     */
    static boolean enterUnlessEnding() {
        inProgress.incrementAndGet();
        if (refusal != null) {
            inProgress.decrementAndGet();
            return false;
        }
        return true;
    }

    static void leave() {
        inProgress.decrementAndGet();
    }

    static int inProgress() {
        return inProgress.get();
    }

    /** From now on no call may start on this rank: the job is ending {@code because}. */
    static void refuseNew(int rank, String because) {
        refusal = "mn4j: no communicator call may start on rank " + rank + " any more: " + because
                + " (join the threads that communicate before the job ends)";
    }
}
