package io.mn4j.gnn.shard;

import io.mn4j.gnn.graph.Csr;
import org.bytedeco.pytorch.Tensor;

/**
 * The in-edges of this rank's nodes whose sources are owned by one partition ({@link #partner}),
 * with the partner's rows they read compacted: column {@code c} of {@link #edges} is the partner's
 * local row {@code needRows[c]}.
 */
final class Shard implements AutoCloseable {
    final int partner;
    /** Partner-local rows this rank reads, sorted, int64. */
    final Tensor needRows;
    /** This rank's local rows the partner reads, int64 (what the partner's needRows is for us). */
    Tensor sendRows;
    /** numLocal × needRows edges, unweighted. */
    final Csr edges;
    /** In-degree without stored self-loops of each needed source row (owned by the partner), float64: for GCN's weights. */
    Tensor sourceDegree;

    Shard(int partner, Tensor needRows, Csr edges) {
        this.partner = partner;
        this.needRows = needRows;
        this.edges = edges;
    }

    long numNeeded() {
        return needRows.size(0);
    }

    @Override
    public void close() {
        needRows.close();
        if (sendRows != null) {
            sendRows.close();
        }
        if (sourceDegree != null) {
            sourceDegree.close();
        }
        edges.close();
    }
}
