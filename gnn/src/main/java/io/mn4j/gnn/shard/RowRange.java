package io.mn4j.gnn.shard;

import io.mn4j.gnn.graph.Csr;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.pytorch.Tensor;

/** Rows {@code [from, from + rows)} of a shard and their edges: one step of a {@link ShardOperator}. */
record RowRange(Csr edges, long from, long rows) {
    /** The range's rows of {@code t} (a view), or null for null. */
    Tensor narrow(Tensor t) {
        return t == null ? null : t.narrow(0, from, rows);
    }

    /** The range's rows of each tensor (nulls stay null). */
    List<Tensor> narrow(List<Tensor> ts) {
        List<Tensor> out = new ArrayList<>(ts.size());
        ts.forEach(t -> out.add(narrow(t)));
        return out;
    }
}
