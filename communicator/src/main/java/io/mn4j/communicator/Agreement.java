package io.mn4j.communicator;

import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;

/** Whether every rank of a communicator holds the same value, in one small all-reduce. */
final class Agreement {
    private Agreement() {
    }

    /**
     * True on every rank if every rank passed the same {@code value} and {@code fine}; false on
     * every rank otherwise. One all-reduce (MAX) of the value, its negation and a flag: the
     * maximum and the minimum agree only when all values do. Every rank must call it.
     */
    static boolean sameOnEveryRank(Intracomm comm, long value, boolean fine) throws MPIException {
        long[] range = {value, -value, fine ? 0 : 1};
        comm.allReduce(range, 3, MPI.LONG, MPI.MAX);
        return range[0] == value && -range[1] == value && range[2] == 0;
    }
}
