package io.mn4j.gnn.shard;

import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;

/**
 * The ids random choices are keyed by, for this rank's nodes and for the rows it reads from every
 * partner: by default the graph's own (partitioned) numbering, or ids the caller gives, such as
 * the original graph's, which do not depend on how the graph was cut.
 */
final class NodeNumbering {
    private final long[] local;
    /** Per partner, the ids of the rows this rank reads from it, in the order of its shard's columns. */
    private final long[][] fromPartner;
    /** Every partner's, in partner order: the columns of the halo graph. */
    private final long[] halo;

    private NodeNumbering(ShardLayout layout, long[] local, long[][] fromPartner) {
        this.local = local;
        this.fromPartner = fromPartner;
        int n = 0;
        for (int p = 0; p < layout.parts(); p++) {
            n += p == layout.rank() ? 0 : fromPartner[p].length;
        }
        this.halo = new long[n];
        int at = 0;
        for (int p = 0; p < layout.parts(); p++) {
            if (p != layout.rank()) {
                System.arraycopy(fromPartner[p], 0, halo, at, fromPartner[p].length);
                at += fromPartner[p].length;
            }
        }
    }

    /** The graph's own numbering: global ids, computed without communication. */
    static NodeNumbering ofGraph(ShardLayout layout) {
        long[] local = new long[Math.toIntExact(layout.numLocal())];
        for (int i = 0; i < local.length; i++) {
            local[i] = layout.firstNode() + i;
        }
        long[][] from = new long[layout.parts()][];
        for (int p = 0; p < layout.parts(); p++) {
            long first = layout.firstNode(p);
            from[p] = p == layout.rank() ? local
                    : Arrays.stream(Tensors.toLongArray(layout.shard(p).needRows)).map(r -> r + first).toArray();
        }
        return new NodeNumbering(layout, local, from);
    }

    /** {@code ids} (int64, one per local node) here, and each partner's for the rows this rank reads: one exchange. Collective. */
    static NodeNumbering exchange(ShardLayout layout, Tensor ids) {
        long[] local = Tensors.toLongArray(ids);
        long[][] from = new long[layout.parts()][];
        try (PointerScope scope = new PointerScope()) {
            List<Tensor> sends = new ArrayList<>(layout.parts());
            for (int p = 0; p < layout.parts(); p++) {
                sends.add(p == layout.rank() ? Tensors.longs(new long[0]) : ids.index_select(0, layout.shard(p).sendRows));
            }
            List<Tensor> got = layout.communicator().alltoall(sends);
            for (int p = 0; p < layout.parts(); p++) {
                from[p] = p == layout.rank() ? local : Tensors.toLongArray(got.get(p));
            }
        }
        return new NodeNumbering(layout, local, from);
    }

    /** This rank's nodes' ids. */
    long[] local() {
        return local;
    }

    /** The ends of the local shard's edges (its columns are this rank's rows). */
    EdgeEnds localEnds() {
        return new EdgeEnds(local, 0, local);
    }

    /** The ends of the edges of partner p's shard. */
    EdgeEnds remoteEnds(int p) {
        return new EdgeEnds(local, 0, fromPartner[p]);
    }

    /** The ends of the halo graph's edges (ONE_SHOT, PIPELINED). */
    EdgeEnds haloEnds() {
        return new EdgeEnds(local, 0, halo);
    }
}
