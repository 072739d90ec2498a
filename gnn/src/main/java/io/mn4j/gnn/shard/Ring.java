package io.mn4j.gnn.shard;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.RecvHandle;
import io.mn4j.communicator.SendHandle;
import java.util.function.BiConsumer;
import java.util.function.IntFunction;
import org.bytedeco.pytorch.Tensor;

/**
 * SAR's ring: at step r (1 ≤ r < N) rank i sends to (i+r) mod N and receives from (i−r) mod N, so
 * every pair exchanges exactly once and no rank waits on a busy peer. Up to {@code depth} steps
 * are in flight at once (prefetch), and each received block is released as soon as it is used.
 */
final class Ring {
    private Ring() {
    }

    /**
     * Forward direction: {@code rowsFor.apply(p)} is what partner p needs from this rank;
     * {@code use} gets each partner's block (owned by the ring: it is released afterwards).
     */
    static void fetch(Communicator comm, int tag, int depth, IntFunction<Tensor> rowsFor,
            BiConsumer<Integer, Tensor> use) {
        int n = comm.size(), me = comm.rank();
        run(comm, tag, depth, r -> (me + r) % n, r -> (me - r + n) % n, rowsFor, use);
    }

    /**
     * Backward direction, the mirror of {@link #fetch}: at step r, gradients go back to the rank
     * this rank fetched from, {@code (i−r) mod N}, and come from the rank that fetched from it.
     */
    static void pushBack(Communicator comm, int tag, int depth, IntFunction<Tensor> gradFor,
            BiConsumer<Integer, Tensor> use) {
        int n = comm.size(), me = comm.rank();
        run(comm, tag, depth, r -> (me - r + n) % n, r -> (me + r) % n, gradFor, use);
    }

    /**
     * SAR's rematerializing backward: at step r this rank re-fetches the block of (i−r) mod N
     * (sending its own rows to (i+r) mod N), turns it into gradients with {@code compute}, sends
     * them back to (i−r) and receives from (i+r) the gradients of the rows it sent, for
     * {@code received}. One block and its gradient live at a time; the rows sent go before the
     * computation, the fetched block right after it.
     */
    static void refetchAndReturn(Communicator comm, int fetchTag, int gradTag, IntFunction<Tensor> rowsFor,
            java.util.function.BiFunction<Integer, Tensor, Tensor> compute, BiConsumer<Integer, Tensor> received) {
        int n = comm.size(), me = comm.rank();
        for (int r = 1; r < n; r++) {
            int from = (me - r + n) % n, to = (me + r) % n;
            RecvHandle rows = comm.irecv(from, fetchTag);
            Tensor mine = rowsFor.apply(to);
            SendHandle sent = comm.isend(mine, to, fetchTag);
            Tensor block = rows.waitFor();
            // The partner posted its receive before waiting: our rows are taken now, and their
            // buffer need not live through the computation.
            sent.waitFor();
            mine.close();
            RecvHandle gradIn = comm.irecv(to, gradTag);
            Tensor grad = compute.apply(from, block);
            block.close();
            SendHandle gradOut = comm.isend(grad, from, gradTag);
            Tensor back = gradIn.waitFor();
            received.accept(to, back);
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
