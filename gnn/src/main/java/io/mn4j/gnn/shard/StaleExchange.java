package io.mn4j.gnn.shard;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.RecvHandle;
import io.mn4j.communicator.SendHandle;
import io.mn4j.tensor.Scopes;
import io.mn4j.tensor.Tensors;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;

/**
 * One direction of one pipelined aggregation (PipeGCN): each use sends this step's blocks to every
 * partner without waiting, and hands back blocks the partners sent at an earlier use: the newest
 * generation (one use's blocks from every partner) that has fully arrived, if it is at most
 * {@code staleness} uses old; otherwise it waits for the oldest one that is not. With staleness 1
 * (PipeGCN) that is always the previous use's. The first use has nothing earlier: it waits for this
 * use's blocks and hands them back, and later uses may read them again while they are recent
 * enough.
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
    private final int staleness;
    /** What the blocks are, for errors: "rank 2: pipelined aggregation 1's rows". */
    private final String what;
    /** Generations posted and not yet taken, oldest first. */
    private final ArrayDeque<Generation> inFlight = new ArrayDeque<>();
    /** Sends of taken generations, until they complete. */
    private final List<SendHandle> sending = new ArrayList<>();
    /** The newest generation taken, while a later use may still read it; null otherwise. */
    private Tensor[] latest;
    private int latestUse = -1;
    /** The running averages handed back when smoothing (null until the first use). */
    private Tensor[] average;
    private int uses;
    private boolean closed;

    /** One use's blocks in flight: received from and sent to every partner. */
    private record Generation(int use, RecvHandle[] receives, SendHandle[] sends) {
    }

    StaleExchange(Communicator comm, int tag, double smoothing, int staleness, String what) {
        this.comm = comm;
        this.tag = tag;
        this.smoothing = smoothing;
        this.staleness = staleness;
        this.what = what;
    }

    /** How many times {@link #exchange} has been called. */
    int uses() {
        return uses;
    }

    /**
     * Sends {@code blocks[p]} to every partner p (the entry of this rank is ignored) and returns,
     * per partner, the blocks of the generation this use reads (at the first use, the blocks
     * partners send now). The caller owns the returned tensors (they belong to no pointer scope)
     * and should close them as soon as it has used them.
     *
     * @throws IllegalStateException after {@link #close()}, or if a partner's block differs in
     *     width or dtype from the one this rank sends it now (the pipeline then holds blocks of
     *     both: {@code mode(...)} ends it)
     */
    Tensor[] exchange(Tensor[] blocks) {
        if (closed) {
            throw new IllegalStateException(what + ": the pipeline was ended (mode(), smoothing(), staleness() or close()) "
                    + "between a training forward and its backward");
        }
        int use = uses++;
        if (use == 0) {
            post(blocks, use);
            take(inFlight.pollFirst());
        } else {
            while (!inFlight.isEmpty() && arrived(inFlight.peekFirst())) {
                take(inFlight.pollFirst());
            }
            while (latest == null || use - latestUse > staleness) {
                if (inFlight.isEmpty()) {
                    // Only after an earlier use failed between taking its blocks and sending its own.
                    throw new IllegalStateException(what + ": nothing in flight to read after an earlier failure; "
                            + "mode(...) restarts the pipeline");
                }
                take(inFlight.pollFirst()); // waits: the newest taken is older than the bound allows
            }
        }
        Tensor[] got = new Tensor[latest.length];
        for (int p = 0; p < got.length; p++) {
            got[p] = Scopes.own(latest[p]);
        }
        if (latestUse + staleness < use + 1) {
            // No later use may read it: its memory goes now.
            Scopes.closeAll(latest);
            latest = null;
        }
        if (use > 0) {
            post(blocks, use);
        }
        try {
            for (int p = 0; p < got.length; p++) {
                if (got[p] != null) {
                    requireLike(blocks[p], got[p], p, "sent it in an earlier epoch");
                }
            }
            return smoothing == 0 ? got : smoothed(got);
        } catch (RuntimeException e) {
            Scopes.closeAll(got);
            throw e;
        }
    }

    /** Whether every block of {@code g} is in (never waits). */
    private static boolean arrived(Generation g) {
        for (RecvHandle r : g.receives) {
            if (r != null && !r.test()) {
                return false;
            }
        }
        return true;
    }

    /** Waits for the blocks of {@code g}, which become {@link #latest}; its sends go on. */
    private void take(Generation g) {
        Tensor[] got = new Tensor[g.receives.length];
        for (int p = 0; p < got.length; p++) {
            if (g.receives[p] != null) {
                got[p] = Scopes.unscoped(g.receives[p].waitFor());
            }
        }
        for (SendHandle s : g.sends) {
            if (s != null) {
                sending.add(s);
            }
        }
        if (latest != null) {
            Scopes.closeAll(latest);
        }
        latest = got;
        latestUse = g.use;
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
                // A copy: the first blocks may be handed back again.
                average[p] = Scopes.unscoped(blocks[p].clone());
            } else {
                average[p].mul_(new Scalar(smoothing)).add_(blocks[p], new Scalar(1 - smoothing));
            }
            blocks[p].close();
            out[p] = Scopes.own(average[p]);
        }
        return out;
    }

    /**
     * Advances the transfers in flight without waiting: a completed send lets go of its block at
     * once, and a receive whose header has come posts its payload.
     */
    void settle() {
        for (Generation g : inFlight) {
            arrived(g);
            for (SendHandle s : g.sends) {
                if (s != null) {
                    s.test();
                }
            }
        }
        sending.removeIf(SendHandle::test);
    }

    private void post(Tensor[] blocks, int use) {
        int parts = comm.size(), me = comm.rank();
        RecvHandle[] receives = new RecvHandle[parts];
        SendHandle[] sends = new SendHandle[parts];
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
        inFlight.addLast(new Generation(use, receives, sends));
    }

    /**
     * Takes the blocks still in flight, waits for this rank's to be taken, and releases
     * everything held. Collective, like the uses: the partners sent those blocks at their uses,
     * and take this rank's in their own close.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        while (!inFlight.isEmpty()) {
            take(inFlight.pollFirst());
        }
        for (SendHandle s : sending) {
            s.waitFor();
        }
        sending.clear();
        closeAll(latest);
        closeAll(average);
        latest = null;
        average = null;
    }

    private static void closeAll(Tensor[] ts) {
        if (ts != null) {
            Scopes.closeAll(ts);
        }
    }
}
