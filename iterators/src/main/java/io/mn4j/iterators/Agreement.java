package io.mn4j.iterators;

import io.mn4j.communicator.Communicator;
import java.util.List;

/**
 * Collective checks: every rank contributes what it knows, and either every rank goes on or
 * every rank throws the same message. A check that failed on one rank only would leave the others
 * waiting in the next collective.
 */
final class Agreement {
    private Agreement() {
    }

    /**
     * Every rank passes its own problem (null if none); if any rank has one, every rank throws a
     * {@link DatasetException} listing them all, by rank.
     */
    static void noProblems(Communicator comm, String op, String problem) {
        noProblems(comm, op, problem, null);
    }

    /** {@link #noProblems(Communicator, String, String)}; this rank's exception keeps {@code cause}. */
    static void noProblems(Communicator comm, String op, String problem, Throwable cause) {
        List<String> bad = comm.problemsOnRanks(problem);
        if (!bad.isEmpty()) {
            throw new DatasetException(op + " failed on " + (bad.size() == 1 ? "one rank" : bad.size() + " ranks")
                    + " (of " + comm.size() + "): " + String.join("; ", bad), cause);
        }
    }

    /**
     * Every rank passes its value of {@code what}; unless all are equal, every rank throws a
     * {@link DatasetException} listing each rank's value.
     */
    static void sameValue(Communicator comm, String op, String what, long value) {
        List<Long> all = comm.allgatherObj(value);
        for (long v : all) {
            if (v != all.get(0)) {
                StringBuilder sb = new StringBuilder(op).append(": ranks disagree on ").append(what).append(" (");
                for (int r = 0; r < all.size(); r++) {
                    sb.append(r == 0 ? "" : ", ").append("rank ").append(r).append(": ").append(all.get(r));
                }
                throw new DatasetException(sb.append(')').toString());
            }
        }
    }
}
