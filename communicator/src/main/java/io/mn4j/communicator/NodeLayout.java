package io.mn4j.communicator;

import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;

/**
 * Where a rank sits among the nodes (hosts) a communicator spans: its rank and the number of ranks
 * on its node, its node's index and the number of nodes. Nodes are numbered by their leaders
 * (intra rank 0) in rank order and the number is broadcast within the node, which is right also
 * when nodes hold different numbers of ranks.
 */
record NodeLayout(int intraRank, int intraSize, int interRank, int interSize) {
    /** Collective over {@code comm}. */
    static NodeLayout of(Intracomm comm) throws MPIException {
        int rank = comm.getRank();
        Intracomm node = comm.splitType(Intracomm.TYPE_SHARED, rank, MPI.INFO_NULL);
        try {
            int intraRank = node.getRank();
            Intracomm leadersOrNot = comm.split(intraRank == 0 ? 0 : 1, rank);
            int[] nodeIndexAndCount = {leadersOrNot.getRank(), leadersOrNot.getSize()};
            leadersOrNot.free();
            node.bcast(nodeIndexAndCount, 2, MPI.INT, 0);
            return new NodeLayout(intraRank, node.getSize(), nodeIndexAndCount[0], nodeIndexAndCount[1]);
        } finally {
            node.free();
        }
    }
}
