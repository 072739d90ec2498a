package io.mn4j.gnn.shard;

import io.mn4j.gnn.graph.Csr;
import io.mn4j.tensor.Scopes;
import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * The stepping of large shards: a shard with more than {@code edgesPerStep} edges is run by a
 * {@link ShardOperator} in ranges of its rows, so that a step's temporaries scale with the range
 * instead of the shard.
 */
final class ShardSteps implements AutoCloseable {
    private final long numLocal;
    /** Shards cut into row ranges, built once per shard. */
    private final Map<Csr, List<RowRange>> ranges = new IdentityHashMap<>();
    private long edgesPerStep = -1;

    ShardSteps(long numLocal) {
        this.numLocal = numLocal;
    }

    /** See {@link GraphShardManager#edgesPerStep}; the ranges cut so far are released. */
    synchronized void edgesPerStep(long edges) {
        this.edgesPerStep = edges;
        closeRanges();
    }

    /** {@code edges} as ranges of rows with at most {@code edgesPerStep} edges each (one range when small enough). */
    synchronized List<RowRange> of(Csr edges) {
        long budget = edgesPerStep < 0 ? Math.max(16384, numLocal / 4) : edgesPerStep;
        if (budget == 0 || edges.nnz() <= budget || numLocal <= 1) {
            return List.of(new RowRange(edges, 0, numLocal));
        }
        return ranges.computeIfAbsent(edges, e -> {
            long[] rp = e.rowptrArray();
            List<RowRange> list = new ArrayList<>();
            int from = 0;
            while (from < numLocal) {
                int to = from + 1; // at least one row, however many edges it has
                while (to < numLocal && rp[to + 1] - rp[from] <= budget) {
                    to++;
                }
                list.add(new RowRange(e.rows(from, to), from, to - from));
                from = to;
            }
            return list;
        });
    }

    /**
     * {@code step} in a scope of its own: the state it returns moves to {@code to} and replaces
     * {@code previous} (closed, except tensors the new state reuses); every other tensor it makes
     * is released at once, so one shard's temporaries live at a time.
     */
    static List<Tensor> nextState(PointerScope to, List<Tensor> previous, Supplier<List<Tensor>> step) {
        List<Tensor> next;
        try (PointerScope s = new PointerScope()) {
            next = step.get();
            for (Tensor t : next) {
                Scopes.escape(s, to, t);
            }
        }
        if (previous != null) {
            for (Tensor t : previous) {
                if (next.stream().noneMatch(n -> n == t)) {
                    t.close();
                }
            }
        }
        return next;
    }

    /**
     * Runs {@code op} over {@code edges} reading the block of source rows {@code src}, merging into
     * {@code state.get(0)} (or starting it when {@code state} is empty), range by range for a shard
     * cut into ranges. The block's {@link ShardOperator#sources} are made once and released at the end.
     */
    void accumulate(PointerScope to, List<List<Tensor>> state, ShardOperator op, Csr edges, EdgeEnds ends, Tensor dst, Tensor src) {
        try (PointerScope block = new PointerScope()) {
            List<Tensor> sources = op.sources(src);
            List<RowRange> steps = of(edges);
            if (steps.size() == 1) {
                if (state.isEmpty()) {
                    state.add(nextState(to, null, () -> op.shard(edges, ends, dst, sources)));
                } else {
                    state.set(0, nextState(to, state.get(0), () -> op.combine(state.get(0), op.shard(edges, ends, dst, sources))));
                }
                return;
            }
            accumulateRanges(to, state, op, steps, ends, dst, sources);
        }
    }

    private void accumulateRanges(PointerScope to, List<List<Tensor>> state, ShardOperator op, List<RowRange> steps, EdgeEnds ends,
            Tensor dst, List<Tensor> sources) {
        boolean first = state.isEmpty();
        List<Tensor> acc = first ? null : state.get(0);
        for (RowRange range : steps) {
            try (PointerScope s = new PointerScope()) {
                List<Tensor> part = op.shard(range.edges(), ends.fromRow(range.from()), range.narrow(dst), sources);
                if (acc == null || (!first && range.from() == 0)) {
                    acc = fullSizeState(s, to, part, acc);
                    if (first) {
                        state.add(acc);
                    } else {
                        state.set(0, acc);
                    }
                }
                List<Tensor> merged = first ? part : op.combine(range.narrow(acc), part);
                for (int i = 0; i < acc.size(); i++) {
                    if (acc.get(i) != null) {
                        range.narrow(acc.get(i)).copy_(merged.get(i));
                    }
                }
            }
        }
    }

    /**
     * New full-size state tensors in {@code to}, written range by range (never the operator's own
     * tensors, which may be views of its inputs): empty ones shaped as the first range's
     * {@code part}, or copies of the {@code previous} state, which is closed.
     */
    private List<Tensor> fullSizeState(PointerScope step, PointerScope to, List<Tensor> part, List<Tensor> previous) {
        List<Tensor> fresh = new ArrayList<>(part.size());
        for (int i = 0; i < part.size(); i++) {
            Tensor t = previous == null ? part.get(i) : previous.get(i);
            fresh.add(t == null ? null : Scopes.escape(step, to, previous == null ? torch.empty(fullRows(t), t.options(), null) : t.clone()));
        }
        if (previous != null) {
            Scopes.closeAll(previous.toArray(new Tensor[0]));
        }
        return fresh;
    }

    /** The shape of {@code t} with all of this rank's rows. */
    private long[] fullRows(Tensor t) {
        long[] shape = Tensors.shape(t);
        shape[0] = numLocal;
        return shape;
    }

    private synchronized void closeRanges() {
        ranges.values().forEach(list -> list.forEach(r -> r.edges().close()));
        ranges.clear();
    }

    @Override
    public void close() {
        closeRanges();
    }
}
