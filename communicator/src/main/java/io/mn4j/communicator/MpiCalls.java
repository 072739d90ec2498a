package io.mn4j.communicator;

import java.util.concurrent.atomic.AtomicInteger;
import mpi.MPIException;

/**
 * The communicator calls in progress on any thread of this process. Every communicator operation
 * and every wait on a nonblocking handle enters here, so that the end of the job can wait for
 * them (MPI finalized under a thread inside it crashes the rank) and refuse new ones.
 */
final class MpiCalls {
    private static final AtomicInteger inProgress = new AtomicInteger();
    /** Set once the job is ending: the exception message of a call that starts too late. */
    private static volatile String refusal;

    private MpiCalls() {
    }

    /** MPI calls of one operation. */
    @FunctionalInterface
    interface MpiAction<T> {
        T run() throws MPIException;
    }

    /** Runs {@code action} as a call in progress, MPI errors as {@link CommunicationException}s. */
    static <T> T run(String op, MpiAction<T> action) {
        enter();
        try {
            return action.run();
        } catch (MPIException e) {
            throw new CommunicationException(op + ": MPI error: " + e.getMessage(), e);
        } finally {
            leave();
        }
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
