package io.mn4j.communicator;

import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;

/** Whether every rank of a communicator holds the same value, in one small all-reduce. */
final class AgreementRound {
    private AgreementRound() {
    }

    /**
     * True on every rank if every rank passed the same {@code values} and {@code fine}; false on
     * every rank otherwise. One all-reduce (MAX) of the values, their negations and a flag: the
     * maximum and the minimum agree only when all values do. Every rank must call it with as many
     * values.
     */
    static boolean sameOnEveryRank(Intracomm comm, boolean fine, long... values) throws MPIException {
        return sameOnEveryRank(comm, fine, NOTHING_CARRIED, values);
    }

    private static final long[] NOTHING_CARRIED = new long[0];

    /**
     * {@link #sameOnEveryRank(Intracomm, boolean, long...)} that also carries {@code carried} in
     * the same all-reduce: each of its slots becomes the maximum over the ranks, in place. Where
     * every rank but one passes {@link Long#MIN_VALUE}, that rank's values reach every rank: a
     * broadcast whose root the same round checks. Every rank must pass as many carried values.
     */
    static boolean sameOnEveryRank(Intracomm comm, boolean fine, long[] carried, long... values)
            throws MPIException {
        int c = carried.length;
        int n = values.length;
        long[] range = new long[c + 2 * n + 1];
        System.arraycopy(carried, 0, range, 0, c);
        for (int i = 0; i < n; i++) {
            range[c + i] = values[i];
            range[c + n + i] = -values[i];
        }
        range[c + 2 * n] = fine ? 0 : 1;
        comm.allReduce(range, range.length, MPI.LONG, MPI.MAX);
        System.arraycopy(range, 0, carried, 0, c);
        for (int i = 0; i < n; i++) {
            if (range[c + i] != values[i] || -range[c + n + i] != values[i]) {
                return false;
            }
        }
        return range[c + 2 * n] == 0;
    }
}
