package io.mn4j.gnn.dist;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.RecvHandle;
import io.mn4j.communicator.SendHandle;
import io.mn4j.gnn.util.Tensors;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;

/**
 * One direction of one pipelined aggregation (PipeGCN): each use sends this step's blocks to every
 * partner without waiting, and hands back what the partners sent one use earlier. The first use
 * has nothing earlier: it waits for this step's blocks and hands them back, and the second use gets
 * them again, so from then on every use is exactly one step stale.
 *
 * <p>With smoothing γ > 0 (PipeGCN's moving average), each use hands back instead the running
 * average {@code s ← γ·s + (1−γ)·b} of the blocks b it would have handed back, starting from the
 * first: stale values then change less from epoch to epoch.
 *
 * <p>Every rank must use its exchanges in the same order (the aggregations are collective): the
 * blocks of one use travel under this exchange's tag, and a partner's blocks are taken in the
 * order it sent them.
 */
final class StaleExchange implements AutoCloseable {
    private final Communicator comm;
    private final int tag;
    private final double smoothing;
    /** What the blocks are, for errors: "rank 2: pipelined aggregation 1's rows". */
    private final String what;
    /** Handles on the blocks received at the first use, handed back again at the second. */
    private Tensor[] kept;
    /** The running averages handed back when smoothing (null until the first use). */
    private Tensor[] average;
    private SendHandle[] sends;
    private RecvHandle[] receives;
    private int uses;
    private boolean closed;

    StaleExchange(Communicator comm, int tag, double smoothing, String what) {
        this.comm = comm;
        this.tag = tag;
        this.smoothing = smoothing;
        this.what = what;
    }

    /** How many times {@link #exchange} has been called. */
    int uses() {
        return uses;
    }

    /**
     * Sends {@code blocks[p]} to every partner p (the entry of this rank is ignored) and returns,
     * per partner, the block it sent at the previous use (at the first use, the block it sends
     * now). The caller owns the returned tensors (they belong to no pointer scope) and should
     * close them as soon as it has used them: until the next use they are all the memory a
     * pipelined step keeps besides what is in flight.
     *
     * @throws IllegalStateException after {@link #close()}, or if a partner's block differs in
     *     width or dtype from the one this rank sends it now (the pipeline then holds blocks of
     *     both: {@code mode(...)} ends it)
     */
    Tensor[] exchange(Tensor[] blocks) {
        if (closed) {
            throw new IllegalStateException(what + ": the pipeline was ended (mode(), smoothing() or close()) "
                    + "between a training forward and its backward");
        }
        uses++;
        Tensor[] got = staleBlocks(blocks);
        try {
            for (int p = 0; p < got.length; p++) {
                if (got[p] != null) {
                    requireLike(blocks[p], got[p], p, "sent it the epoch before");
                }
            }
            return smoothing == 0 ? got : smoothed(got);
        } catch (RuntimeException e) {
            Tensors.closeAll(got);
            throw e;
        }
    }

    private Tensor[] staleBlocks(Tensor[] blocks) {
        Tensor[] out;
        if (receives != null) {
            out = complete();
        } else if (kept != null) {
            out = kept;
            kept = null;
        } else {
            post(blocks);
            out = complete();
            kept = new Tensor[out.length];
            for (int p = 0; p < out.length; p++) {
                kept[p] = Tensors.own(out[p]);
            }
            return out;
        }
        post(blocks);
        return out;
    }

    private void requireLike(Tensor mine, Tensor theirs, int partner, String when) {
        if (mine.size(1) != theirs.size(1) || Tensors.type(mine) != Tensors.type(theirs)) {
            throw new IllegalStateException(what + " are " + describe(mine) + " to rank " + partner + " but rank " + partner + " "
                    + when + " as " + describe(theirs) + ": in PIPELINED mode the k-th training aggregation of every epoch "
                    + "must take rows of one width and dtype (mode(...) restarts the pipeline)");
        }
    }

    private static String describe(Tensor t) {
        return Tensors.shapeString(t) + " " + Tensors.type(t);
    }

    /** Folds the blocks into the running averages (releasing them) and returns handles on those. */
    private Tensor[] smoothed(Tensor[] blocks) {
        boolean first = average == null;
        if (first) {
            average = new Tensor[blocks.length];
        }
        for (int p = 0; p < blocks.length; p++) {
            if (blocks[p] != null && !first) {
                requireLike(blocks[p], average[p], p, "sent it in earlier epochs (the running average)");
            }
        }
        Tensor[] out = new Tensor[blocks.length];
        for (int p = 0; p < blocks.length; p++) {
            if (blocks[p] == null) {
                continue;
            }
            if (first) {
                // A copy: the first blocks are handed back again at the second use.
                average[p] = Tensors.unscoped(blocks[p].clone());
            } else {
                average[p].mul_(new Scalar(smoothing)).add_(blocks[p], new Scalar(1 - smoothing));
            }
            blocks[p].close();
            out[p] = Tensors.own(average[p]);
        }
        return out;
    }

    /**
     * Advances the transfers in flight without waiting: a completed send lets go of its block at
     * once instead of at the next use, and a receive whose header has come posts its payload.
     */
    void settle() {
        if (receives == null) {
            return;
        }
        for (RecvHandle r : receives) {
            if (r != null) {
                r.test();
            }
        }
        for (SendHandle s : sends) {
            if (s != null) {
                s.test();
            }
        }
    }

    private void post(Tensor[] blocks) {
        int parts = comm.size(), me = comm.rank();
        receives = new RecvHandle[parts];
        sends = new SendHandle[parts];
        for (int p = 0; p < parts; p++) {
            if (p != me) {
                receives[p] = comm.irecv(p, tag);
            }
        }
        for (int p = 0; p < parts; p++) {
            if (p != me) {
                sends[p] = comm.isend(blocks[p], p, tag);
            }
        }
    }

    /** Waits for the blocks in flight; they then belong to no pointer scope. */
    private Tensor[] complete() {
        Tensor[] got = new Tensor[receives.length];
        for (int p = 0; p < receives.length; p++) {
            if (receives[p] != null) {
                got[p] = Tensors.unscoped(receives[p].waitFor());
            }
        }
        for (SendHandle s : sends) {
            if (s != null) {
                s.waitFor();
            }
        }
        receives = null;
        sends = null;
        return got;
    }

    /**
     * Takes the blocks still in flight and releases everything held. Collective, like the uses:
     * it waits for the partners' blocks of the last use, which they sent then, and for them to
     * take this rank's.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (receives != null) {
            Tensors.closeAll(complete());
        }
        closeAll(kept);
        closeAll(average);
        kept = null;
        average = null;
    }

    private static void closeAll(Tensor[] ts) {
        if (ts != null) {
            Tensors.closeAll(ts);
        }
    }
}
