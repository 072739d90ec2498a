package io.mn4j.gnn.sampling;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.Agreement;
import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;

/**
 * Per-node data (features, labels) of a graph partitioned across the ranks of a communicator, each
 * rank holding the rows of the nodes it owns; {@link #gather} looks rows up by global id wherever
 * they live (PyG's {@code DistFeature}): one all-to-all of the ids, one of the rows. Collective.
 */
public final class DistNodeData {
    private final Communicator comm;
    private final long[] offsets;
    private final Tensor local;

    /**
     * @param local this rank's rows, [owned nodes, ...] (the caller keeps it open while this is used)
     * @throws io.mn4j.communicator.JobInputException on every rank when any rank's rows do not match
     *     the nodes it owns, or the ranks pass different offsets
     */
    public DistNodeData(Communicator comm, long[] offsets, Tensor local) {
        Agreement.agree(comm, "setting up per-node data", () -> {
            Owners.checkOffsets(comm, offsets);
            long owned = offsets[comm.rank() + 1] - offsets[comm.rank()];
            if (local.dim() < 1 || local.size(0) != owned) {
                throw new IllegalArgumentException("it owns " + owned + " nodes but has rows "
                        + Tensors.shapeString(local));
            }
            return null;
        });
        Agreement.requireSame(comm, "per-node data offsets", Arrays.toString(offsets));
        this.comm = comm;
        this.offsets = offsets.clone();
        this.local = local;
    }

    /** This rank's rows of the nodes {@code ids} (global ids it owns). */
    private Tensor rowsOf(Tensor ids) {
        return local.index_select(0, ids.sub(new Scalar(offsets[comm.rank()])));
    }

    /**
     * The rows of {@code nodes} (global ids in {@code [0, offsets[last])}), in that order: a new
     * tensor [nodes.length, ...]. Collective: every rank calls it, each with its own nodes (maybe
     * none).
     */
    public Tensor gather(long[] nodes) {
        long numNodes = offsets[offsets.length - 1];
        Agreement.agree(comm, "looking up node rows", () -> {
            for (long v : nodes) {
                if (v < 0 || v >= numNodes) {
                    throw new IllegalArgumentException("node " + v + " is outside the graph's " + numNodes + " nodes");
                }
            }
            return null;
        });
        Owners req = Owners.group(nodes, offsets);
        long[] shape = Tensors.shape(local);
        shape[0] = nodes.length;
        Tensor out = Tensors.empty(Tensors.type(local), shape);
        try (PointerScope scope = new PointerScope()) {
            // This rank's own rows are copied here, once, not through the all-to-all.
            int me = comm.rank();
            List<Tensor> asked = comm.alltoall(req.tensors(me));
            List<Tensor> rows = new ArrayList<>(asked.size());
            for (int p = 0; p < asked.size(); p++) {
                rows.add(p == me ? local.narrow(0, 0, 0) : rowsOf(asked.get(p)));
            }
            List<Tensor> got = comm.alltoall(rows);
            for (int p = 0; p < got.size(); p++) {
                if (req.ids[p].length > 0) {
                    out.index_copy_(0, Tensors.longs(req.positions[p]), p == me ? rowsOf(Tensors.longs(req.ids[me])) : got.get(p));
                }
            }
        }
        return out;
    }
}
