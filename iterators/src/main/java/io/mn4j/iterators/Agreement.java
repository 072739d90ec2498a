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
     * {@link DatasetException} saying which ranks have which value.
     */
    static void sameValue(Communicator comm, String op, String what, long value) {
        String disagreement = comm.disagreement(value);
        if (disagreement != null) {
            throw new DatasetException(op + ": ranks disagree on " + what + " (" + disagreement + ")");
        }
    }
}
