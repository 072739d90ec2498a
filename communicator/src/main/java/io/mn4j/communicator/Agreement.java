package io.mn4j.communicator;

import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;

/** Whether every rank of a communicator holds the same value, in one small all-reduce. */
final class Agreement {
    private Agreement() {
    }

    /**
     * True on every rank if every rank passed the same {@code values} and {@code fine}; false on
     * every rank otherwise. One all-reduce (MAX) of the values, their negations and a flag: the
     * maximum and the minimum agree only when all values do. Every rank must call it with as many
     * values.
     */
    static boolean sameOnEveryRank(Intracomm comm, boolean fine, long... values) throws MPIException {
        int n = values.length;
        long[] range = new long[2 * n + 1];
        for (int i = 0; i < n; i++) {
            range[i] = values[i];
            range[n + i] = -values[i];
        }
        range[2 * n] = fine ? 0 : 1;
        comm.allReduce(range, range.length, MPI.LONG, MPI.MAX);
        for (int i = 0; i < n; i++) {
            if (range[i] != values[i] || -range[n + i] != values[i]) {
                return false;
            }
        }
        return range[2 * n] == 0;
    }
}
