package io.mn4j.gnn.shard;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.RecvHandle;
import io.mn4j.communicator.SendHandle;
import java.util.function.BiConsumer;
import java.util.function.BiFunction;
import java.util.function.IntFunction;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * SAR's ring over this rank's shards: at step r (1 ≤ r < N) rank i sends to (i+r) mod N and
 * receives from (i−r) mod N, so every pair exchanges exactly once and no rank waits on a busy
 * peer. Up to {@link #depth} steps are in flight at once (prefetch), and each received block is
 * released as soon as it is used. Rows travel under tag 11, their gradients under 12, and the rows
 * SAR's backward fetches again under 13.
 */
final class Ring {
    private static final int TAG_FORWARD = 11;
    private static final int TAG_BACKWARD = 12;
    private static final int TAG_REFETCH = 13;

    private final ShardLayout layout;
    private int depth = 1;

    Ring(ShardLayout layout) {
        this.layout = layout;
    }

    /** Remote blocks fetched ahead of the one being aggregated (at least 0). */
    void depth(int blocks) {
        this.depth = Math.max(0, blocks);
    }

    /**
     * Sends every partner the rows of {@code data} it reads and gives {@code use} each partner's
     * block of rows (owned by the ring: it is released afterwards).
     */
    void fetch(Tensor data, BiConsumer<Integer, Tensor> use) {
        Communicator comm = layout.communicator();
        int n = comm.size(), me = comm.rank();
        run(comm, TAG_FORWARD, depth, r -> (me + r) % n, r -> (me - r + n) % n,
                p -> data.index_select(0, layout.shard(p).sendRows), use);
    }

    /**
     * The backward direction, the mirror of {@link #fetch}: sends {@code gradFor.apply(p)}
     * (gradient of the rows fetched from p; null means zeros) to each partner p, and adds what
     * partners send into the rows of {@code into} they read. The ring owns what {@code gradFor}
     * returns and releases it once sent, so a step's payload goes with the step.
     */
    void pushGradients(Tensor into, IntFunction<Tensor> gradFor) {
        Communicator comm = layout.communicator();
        int n = comm.size(), me = comm.rank();
        long features = into.size(1);
        run(comm, TAG_BACKWARD, depth, r -> (me - r + n) % n, r -> (me + r) % n, p -> {
            Tensor g = gradFor.apply(p);
            // isend makes a strided payload contiguous itself (and keeps that copy while in flight).
            return g != null ? g : torch.zeros(new long[] {layout.shard(p).numNeeded(), features}, into.options());
        }, (p, grad) -> layout.addRowGradients(into, p, grad));
    }

    /**
     * SAR's rematerializing backward: at step r this rank fetches again the block of (i−r) mod N
     * (sending its own rows of {@code data} to (i+r) mod N), turns it into gradients with
     * {@code compute}, sends them back to (i−r) and adds the gradients (i+r) returns for the rows
     * it read into {@code into}. One block and its gradient live at a time.
     */
    void refetchAndReturn(Tensor data, BiFunction<Integer, Tensor, Tensor> compute, Tensor into) {
        Communicator comm = layout.communicator();
        int n = comm.size(), me = comm.rank();
        for (int r = 1; r < n; r++) {
            int from = (me - r + n) % n, to = (me + r) % n;
            RecvHandle rows = comm.irecv(from, TAG_REFETCH);
            Tensor mine = data.index_select(0, layout.shard(to).sendRows);
            SendHandle sent = comm.isend(mine, to, TAG_REFETCH);
            Tensor block = rows.waitFor();
            // The partner posted its receive before waiting: our rows are taken now, and their
            // buffer need not live through the computation.
            sent.waitFor();
            mine.close();
            RecvHandle gradIn = comm.irecv(to, TAG_BACKWARD);
            Tensor grad = compute.apply(from, block);
            block.close();
            SendHandle gradOut = comm.isend(grad, from, TAG_BACKWARD);
            Tensor back = gradIn.waitFor();
            layout.addRowGradients(into, to, back);
            gradOut.waitFor();
            grad.close();
            back.close();
        }
    }

    private static void run(Communicator comm, int tag, int depth, IntFunction<Integer> sendTo,
            IntFunction<Integer> recvFrom, IntFunction<Tensor> payloadFor, BiConsumer<Integer, Tensor> use) {
        int n = comm.size();
        if (n == 1) {
            return;
        }
        int steps = n - 1;
        SendHandle[] sends = new SendHandle[steps + 1];
        RecvHandle[] recvs = new RecvHandle[steps + 1];
        Tensor[] payloads = new Tensor[steps + 1];
        int posted = 0;
        for (int r = 1; r <= steps; r++) {
            while (posted < steps && posted < r + Math.max(0, depth)) {
                int s = ++posted;
                recvs[s] = comm.irecv(recvFrom.apply(s), tag);
                payloads[s] = payloadFor.apply(sendTo.apply(s));
                sends[s] = comm.isend(payloads[s], sendTo.apply(s), tag);
            }
            Tensor block = recvs[r].waitFor();
            use.accept(recvFrom.apply(r), block);
            block.close();
            recvs[r] = null;
            sends[r].waitFor();
            payloads[r].close();
            payloads[r] = null;
            sends[r] = null;
        }
    }
}
