package io.mn4j.gnn.dist;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.RecvHandle;
import io.mn4j.communicator.SendHandle;
import io.mn4j.gnn.util.Tensors;
import org.bytedeco.pytorch.Tensor;

/**
 * One direction of one pipelined aggregation (PipeGCN): each use sends this step's blocks to every
 * partner without waiting, and hands back what the partners sent one use earlier. The first use
 * has nothing earlier: it waits for this step's blocks and hands them back, and the second use gets
 * them again, so from then on every use is exactly one step stale.
 *
 * <p>Every rank must use its exchanges in the same order (the aggregations are collective): the
 * blocks of one use travel under this exchange's tag, and a partner's blocks are taken in the
 * order it sent them.
 */
final class StaleExchange implements AutoCloseable {
    private final Communicator comm;
    private final int tag;
    /** Blocks received at the first use, handed back again at the second. */
    private Tensor[] kept;
    /** The blocks handed back last, released at the next use. */
    private Tensor[] lent;
    private SendHandle[] sends;
    private RecvHandle[] receives;

    StaleExchange(Communicator comm, int tag) {
        this.comm = comm;
        this.tag = tag;
    }

    /**
     * Sends {@code blocks[p]} to every partner p (the entry of this rank is ignored) and returns,
     * per partner, the block it sent at the previous use (at the first use, the block it sends
     * now). The returned tensors belong to this exchange: valid until its next use or close.
     */
    Tensor[] exchange(Tensor[] blocks) {
        if (lent != kept) {
            release(lent);
        }
        lent = null;
        Tensor[] out;
        if (receives != null) {
            out = complete();
        } else if (kept != null) {
            out = kept;
            kept = null;
        } else {
            post(blocks);
            kept = complete();
            lent = kept;
            return kept;
        }
        post(blocks);
        lent = out;
        return out;
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

    /** Waits for the blocks in flight; they then belong to no pointer scope, only to this exchange. */
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

    private static void release(Tensor[] blocks) {
        if (blocks != null) {
            Tensors.closeAll(blocks);
        }
    }

    /**
     * Takes the blocks still in flight (every partner sent them, so this does not wait long) and
     * releases everything held. Collective, like the uses: every rank closes its exchanges.
     */
    @Override
    public void close() {
        if (receives != null) {
            release(complete());
        }
        if (kept != lent) {
            release(kept);
        }
        release(lent);
        kept = null;
        lent = null;
    }
}
