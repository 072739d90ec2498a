package io.mn4j.gnn.partition;

import io.mn4j.communicator.Communicator;
import io.mn4j.gnn.graph.Csr;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;

/**
 * Partitions that travel over MPI instead of through a shared file system: the root cuts the graph
 * and sends every other rank its own partition, one at a time, so that no rank reads another
 * host's disk and the root holds the graph plus one partition at a time. Each partition arrives
 * with the arrays {@link PartitionWriter} would have written, in the same order.
 */
public final class PartitionScatter {
    /**
     * The tag of the partitions' messages on the communicator's point-to-point channel; nothing
     * else may be in flight from the root with it while {@link #scatter} runs.
     */
    public static final int TAG = 0;

    private PartitionScatter() {
    }

    /**
     * Every rank receives partition {@code comm.rank()} of {@code cut}, which only the root passes
     * (the others pass null). Collective.
     *
     * @throws IllegalArgumentException on every rank when the cut does not have one partition per rank
     */
    public static PartitionData scatter(Communicator comm, int root, PartitionBuilder cut) {
        PartitionMetadata m = comm.bcastObj(comm.rank() == root ? cut.metadata() : null, root);
        if (m.numParts() != comm.size()) {
            throw new IllegalArgumentException("rank " + root + " cut the graph into " + m.numParts() + " partitions but the job has "
                    + comm.size() + " ranks (one partition per rank)");
        }
        if (comm.rank() != root) {
            return receive(comm, root, m);
        }
        for (int k = 0; k < comm.size(); k++) {
            if (k != root) {
                try (PartitionData part = cut.part(k)) {
                    for (Tensor t : arrays(part)) {
                        comm.send(t, k, TAG);
                    }
                }
            }
        }
        return cut.part(root);
    }

    /** The arrays of a partition in the order they travel: those the metadata says exist. */
    private static List<Tensor> arrays(PartitionData p) {
        List<Tensor> a = new ArrayList<>(List.of(p.originalIds(), p.rowptr(), p.col()));
        PartitionMetadata m = p.metadata();
        if (m.weighted()) a.add(p.edgeWeight());
        if (m.featureSize() > 0) a.add(p.features());
        if (m.hasLabels()) a.add(p.labels());
        if (m.hasMasks()) a.addAll(List.of(p.trainMask(), p.valMask(), p.testMask()));
        return a;
    }

    private static PartitionData receive(Communicator comm, int root, PartitionMetadata m) {
        int k = comm.rank();
        try (PointerScope s = new PointerScope()) {
            Tensor ids = comm.recv(root, TAG);
            Tensor rowptr = comm.recv(root, TAG);
            Tensor col = comm.recv(root, TAG);
            Tensor w = m.weighted() ? comm.recv(root, TAG) : null;
            Tensor x = m.featureSize() > 0 ? comm.recv(root, TAG) : null;
            Tensor y = m.hasLabels() ? comm.recv(root, TAG) : null;
            Tensor tr = m.hasMasks() ? comm.recv(root, TAG) : null;
            Tensor va = m.hasMasks() ? comm.recv(root, TAG) : null;
            Tensor te = m.hasMasks() ? comm.recv(root, TAG) : null;
            Csr adj = Csr.of(m.nodes(k), m.numNodes(), rowptr, col, w);
            return new PartitionData(m, k, ids, adj, x, y, tr, va, te);
        }
    }
}
