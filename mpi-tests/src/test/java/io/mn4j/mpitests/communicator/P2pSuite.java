package io.mn4j.mpitests.communicator;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.RecvHandle;
import io.mn4j.communicator.SendHandle;
import io.mn4j.mpitests.Check;
import io.mn4j.mpitests.Scenario;
import io.mn4j.mpitests.ScenarioSuite;
import io.mn4j.mpitests.communicator.Data.Item;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.IntBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import mpi.MPI;
import mpi.Request;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * Point-to-point traffic of the Communicator: blocking and nonblocking, every dtype and shape,
 * receives into existing tensors, ordering of outstanding receives, overlap with computation,
 * objects, chunked messages and bad inputs. Every receiver rebuilds what its peer sent from
 * (dtype, shape, seed) and compares exactly.
 */
public class P2pSuite implements ScenarioSuite {
    /** 0-d, zero-size, small, 5-d, and large enough (>= 2000 bytes) to leave the inline path. */
    static final long[][] SHAPES = {{}, {0, 3}, {2, 3}, {2, 1, 3, 1, 2}, {40, 50}};
    static final long[][] TRANSPOSED = {{3, 5}, {50, 40}};
    /** For 16-byte chunks: a few hundred bytes (inline for 1- and 2-byte dtypes) and 1.4-11 KB. */
    static final long[][] CHUNK_SHAPES = {{}, {0, 3}, {5, 60}, {7, 200}};
    static final long[][] CHUNK_TRANSPOSED = {{60, 5}};
    /**
     * The progress thread's race scenario: rounds, and receives per round (payloads of 1200 to
     * 3680 bytes, none inline). With the race back in, 2 of 10 launches at 3 ranks failed.
     */
    static final int RACE_ROUNDS = 500;
    static final int RACE_RECEIVES = 32;
    /** Far more than a thread's stack holds frames for (3000-4000 overflowed a recursive walk). */
    static final int DEEP_RECEIVES = 20_000;

    /** A message from src to dst, item k: every rank can rebuild it. */
    static long seed(int src, int dst, int k) {
        return 1000L * src + 37L * dst + k;
    }

    /** One side of a pair exchange: this rank and {@code peer}, {@code first} when this rank sends first. */
    @FunctionalInterface
    interface PairAction {
        void run(int peer, boolean first) throws Exception;
    }

    /**
     * Visits every pair (i, j), i < j, in the same lexicographic order on every rank: the lower
     * rank sends first. Blocking exchanges in this order cannot form a cycle, so cannot deadlock.
     */
    static void forEachPair(Communicator c, PairAction action) throws Exception {
        int me = c.rank();
        for (int i = 0; i < c.size(); i++) {
            for (int j = i + 1; j < c.size(); j++) {
                if (me == i) {
                    action.run(j, true);
                } else if (me == j) {
                    action.run(i, false);
                }
            }
        }
    }

    /** Blocking send and recv of every item between every pair, with tags cycling over three. */
    static void blockingMatrix(Communicator c, Check check, List<Item> items, int tag0, String prefix)
            throws Exception {
        int me = c.rank();
        forEachPair(c, (peer, first) -> {
            for (int round = 0; round < 2; round++) {
                if ((round == 0) == first) {
                    for (int k = 0; k < items.size(); k++) {
                        Tensor x = items.get(k).build(seed(me, peer, k));
                        Tensor copy = x.clone();
                        c.send(x, peer, tag0 + k % 3);
                        check.tensorsClose(prefix + "input unchanged " + items.get(k).name(), copy, x, 0);
                    }
                } else {
                    for (int k = 0; k < items.size(); k++) {
                        Tensor got = c.recv(peer, tag0 + k % 3);
                        check.tensorsClose(prefix + items.get(k).name() + " from " + peer,
                                items.get(k).build(seed(peer, me, k)), got, 0);
                    }
                }
            }
        });
    }

    /**
     * Every rank posts a receive of every item from every rank (itself included) on one tag, then
     * sends, then waits for the receives in reverse order: the k-th receive from a source must
     * still get that source's k-th message.
     */
    static void nonblockingMatrix(Communicator c, Check check, List<Item> items, int tag, String prefix) {
        int me = c.rank();
        int n = c.size();
        RecvHandle[][] recvs = new RecvHandle[n][items.size()];
        for (int peer = 0; peer < n; peer++) {
            for (int k = 0; k < items.size(); k++) {
                recvs[peer][k] = c.irecv(peer, tag);
            }
        }
        List<SendHandle> sends = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            int peer = (me + i) % n;
            for (int k = 0; k < items.size(); k++) {
                sends.add(c.isend(items.get(k).build(seed(me, peer, k)), peer, tag));
            }
        }
        for (int peer = n - 1; peer >= 0; peer--) {
            for (int k = items.size() - 1; k >= 0; k--) {
                Tensor got = recvs[peer][k].waitFor();
                check.tensorsClose(prefix + items.get(k).name() + " from " + peer,
                        items.get(k).build(seed(peer, me, k)), got, 0);
                check.equal(prefix + "bytes of " + items.get(k).name() + " from " + peer,
                        got.nbytes(), recvs[peer][k].bytes());
            }
        }
        for (SendHandle h : sends) {
            h.waitFor();
        }
        check.isTrue(prefix + "sends complete", sends.stream().allMatch(SendHandle::test),
                "a waited send does not test complete");
    }

    /** Alternating small and large messages, a zero-size one and a 0-d one: K messages on one tag. */
    static Tensor orderedMessage(int src, int k) {
        long[] shape = switch (k % 4) {
            case 0 -> new long[] {3000};
            case 1 -> new long[] {3};
            case 2 -> k % 8 == 2 ? new long[] {0, 4} : new long[] {};
            default -> new long[] {20, 30};
        };
        return Data.wide(k % 2 == 0 ? ScalarType.Float : ScalarType.Long, shape, 100L * src + k);
    }

    /**
     * Receives from the same source and tag complete in posting order: (a) posted before the
     * sends and tested in reverse order, (b) posted after the messages arrived and waited in a
     * scrambled order, (c) two tags interleaved, tested round-robin from the back.
     */
    static void ordering(Communicator c, Check check, int tag0, String prefix) {
        int n = c.size();
        int me = c.rank();
        int next = (me + 1) % n;
        int prev = (me + n - 1) % n;
        int k = 8;

        RecvHandle[] hs = new RecvHandle[k];
        for (int i = 0; i < k; i++) {
            hs[i] = c.irecv(prev, tag0);
        }
        List<SendHandle> sends = new ArrayList<>();
        for (int i = 0; i < k; i++) {
            sends.add(c.isend(orderedMessage(me, i), next, tag0));
        }
        List<Integer> completion = pollReversed(hs, sends);
        check.equal(prefix + "(a) all completed by test()", k, completion.size());
        for (int i = 0; i < k; i++) {
            check.tensorsClose(prefix + "(a) message " + i, orderedMessage(prev, i), hs[i].get(), 0);
        }

        for (int i = 0; i < k; i++) {
            sends.add(c.isend(orderedMessage(me, i), next, tag0 + 1));
        }
        c.barrier(); // the headers are now queued at the receiver before any receive is posted
        for (int i = 0; i < k; i++) {
            hs[i] = c.irecv(prev, tag0 + 1);
        }
        for (int i : new int[] {5, 2, 7, 0, 3, 6, 1, 4}) {
            check.tensorsClose(prefix + "(b) message " + i + " waited out of order",
                    orderedMessage(prev, i), hs[i].waitFor(), 0);
        }

        RecvHandle[] a = new RecvHandle[k];
        RecvHandle[] b = new RecvHandle[k];
        for (int i = 0; i < k; i++) {
            b[i] = c.irecv(prev, tag0 + 3);
        }
        for (int i = 0; i < k; i++) {
            a[i] = c.irecv(prev, tag0 + 2);
        }
        for (int i = 0; i < k; i++) {
            sends.add(c.isend(orderedMessage(me, i), next, tag0 + 2));
            sends.add(c.isend(orderedMessage(me, 100 + i), next, tag0 + 3));
        }
        RecvHandle[] both = new RecvHandle[2 * k];
        for (int i = 0; i < k; i++) {
            both[2 * i] = a[i];
            both[2 * i + 1] = b[i];
        }
        List<Integer> done = pollReversed(both, sends);
        check.equal(prefix + "(c) all completed by test()", 2 * k, done.size());
        for (int i = 0; i < k; i++) {
            check.tensorsClose(prefix + "(c) tag " + (tag0 + 2) + " message " + i, orderedMessage(prev, i),
                    a[i].get(), 0);
            check.tensorsClose(prefix + "(c) tag " + (tag0 + 3) + " message " + i,
                    orderedMessage(prev, 100 + i), b[i].get(), 0);
        }
        for (SendHandle s : sends) {
            s.waitFor();
        }
    }

    /** Tests receives from the last to the first (and the sends) until all are done or 30 s pass. */
    static List<Integer> pollReversed(RecvHandle[] hs, List<SendHandle> sends) {
        List<Integer> completion = new ArrayList<>();
        boolean[] done = new boolean[hs.length];
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (completion.size() < hs.length && System.nanoTime() < deadline) {
            for (int i = hs.length - 1; i >= 0; i--) {
                if (!done[i] && hs[i].test()) {
                    done[i] = true;
                    completion.add(i);
                }
            }
            for (SendHandle s : sends) {
                s.test();
            }
        }
        return completion;
    }

    /** Receives into existing tensors: contiguous ones are filled in place, views through their base. */
    static void recvInto(Communicator c, Check check, int tag, String prefix, long[] large) throws Exception {
        record Target(ScalarType t, long[] shape, boolean view) {
        }
        List<Target> targets = List.of(
                new Target(ScalarType.Float, new long[] {3, 4}, false),
                new Target(ScalarType.Long, large, false),
                new Target(ScalarType.Half, new long[] {}, false),
                new Target(ScalarType.Bool, new long[] {0, 3}, false),
                new Target(ScalarType.Byte, new long[] {5, 7}, true),
                new Target(ScalarType.Double, new long[] {large[1], large[0]}, true),
                new Target(ScalarType.BFloat16, new long[] {2, 3}, false),
                new Target(ScalarType.Char, new long[] {4, 2}, true));
        int me = c.rank();
        if (c.size() == 1) {
            check.throwsWith(prefix + "recvInto from oneself refused",
                    () -> c.recvInto(Data.empty(ScalarType.Float, 2), 0, tag), "recv", "rank 0", "oneself");
            return;
        }
        forEachPair(c, (peer, first) -> {
            for (int round = 0; round < 2; round++) {
                if ((round == 0) == first) {
                    for (int k = 0; k < targets.size(); k++) {
                        Target t = targets.get(k);
                        c.send(Data.wide(t.t, t.shape, seed(me, peer, k)), peer, tag);
                    }
                } else {
                    for (int k = 0; k < targets.size(); k++) {
                        Target t = targets.get(k);
                        String name = prefix + Data.describe(t.t, t.shape) + (t.view ? " into a view" : "")
                                + " from " + peer;
                        Tensor expected = Data.wide(t.t, t.shape, seed(peer, me, k));
                        Tensor base = t.view ? Data.filled(t.t, t.shape[1], t.shape[0]) : Data.filled(t.t, t.shape);
                        Tensor into = t.view ? base.t() : base;
                        long before = into.numel() > 0 ? into.data_ptr().address() : 0;
                        Tensor ret = c.recvInto(into, peer, tag);
                        check.tensorsClose(name + ": target", expected, into, 0);
                        check.tensorsClose(name + ": base memory", t.view ? expected.t() : expected, base, 0);
                        check.tensorsClose(name + ": returned", expected, ret, 0);
                        if (!t.view && into.numel() > 0) {
                            check.equal(name + ": returns the target, its memory unmoved", before,
                                    ret.data_ptr().address());
                        }
                    }
                }
            }
        });
    }

    /**
     * The lower rank of each pair sends four tensors with one tag (the first two of one size, so
     * that a swap would pass by size); the other posts an irecv, then takes the next two with
     * recv and recvInto, and the last with a second irecv. Messages must land in posting order.
     */
    static void irecvThenRecv(Communicator c, Check check, int tag) throws Exception {
        long[][] shapes = {{40, 50}, {40, 50}, {30, 70}, {600}};
        int me = c.rank();
        if (c.size() == 1) { // no peer: a refused blocking recv from oneself leaves the irecv intact
            RecvHandle early = c.irecv(0, tag);
            SendHandle sent = c.isend(Data.wide(ScalarType.Float, shapes[0], seed(0, 0, 0)), 0, tag);
            check.throwsWith("blocking recv from oneself after an irecv refused", () -> c.recv(0, tag), "recv",
                    "oneself");
            check.tensorsClose("the irecv still gets its message",
                    Data.wide(ScalarType.Float, shapes[0], seed(0, 0, 0)), early.waitFor(), 0);
            sent.waitFor();
            return;
        }
        forEachPair(c, (peer, first) -> {
            if (first) {
                for (int k = 0; k < shapes.length; k++) {
                    c.send(Data.wide(ScalarType.Float, shapes[k], seed(me, peer, k)), peer, tag);
                }
                return;
            }
            RecvHandle early = c.irecv(peer, tag);
            Tensor second = c.recv(peer, tag);
            Tensor third = c.recvInto(Data.filled(ScalarType.Float, shapes[2]), peer, tag);
            RecvHandle late = c.irecv(peer, tag);
            String from = " from " + peer;
            check.tensorsClose("recv after an irecv gets the second message" + from,
                    Data.wide(ScalarType.Float, shapes[1], seed(peer, me, 1)), second, 0);
            check.tensorsClose("recvInto after it gets the third" + from,
                    Data.wide(ScalarType.Float, shapes[2], seed(peer, me, 2)), third, 0);
            check.tensorsClose("the irecv posted first gets the first" + from,
                    Data.wide(ScalarType.Float, shapes[0], seed(peer, me, 0)), early.waitFor(), 0);
            check.tensorsClose("the irecv posted last gets the last" + from,
                    Data.wide(ScalarType.Float, shapes[3], seed(peer, me, 3)), late.waitFor(), 0);
        });
    }

    /**
     * MPI reads a sent tensor and writes a received one after isend/irecv return: closing the
     * caller's scope in between must not free them. Each rank sends to the next a 512 KiB tensor
     * made in a scope closed before the send completes, and receives into a tensor allocated
     * inside another closed scope (test() posts it there). Tensors of the same size made after
     * the scopes closed would take the freed memory, so a freed tensor shows as wrong values.
     */
    static void transfersOutliveScopes(Communicator c, Check check, int tag) throws Exception {
        int n = c.size();
        int me = c.rank();
        int next = (me + 1) % n;
        int prev = (me + n - 1) % n;
        long[] shape = {512, 256};
        SendHandle sent;
        try (PointerScope scope = new PointerScope()) {
            sent = c.isend(Data.wide(ScalarType.Float, shape, seed(me, next, 0)), next, tag);
        }
        RecvHandle got = c.irecv(prev, tag);
        try (PointerScope scope = new PointerScope()) {
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (!got.test() && System.nanoTime() < deadline) {
                sent.test(); // progress for the peer, which may be testing too
            }
        }
        List<Tensor> reuse = new ArrayList<>();
        for (int k = 0; k < 4; k++) {
            reuse.add(Data.filled(ScalarType.Float, shape).fill_(new Scalar(-7.0)));
        }
        sent.waitFor();
        check.tensorsClose("a received tensor from " + prev + " taken after its scope closed",
                Data.wide(ScalarType.Float, shape, seed(prev, me, 0)), got.waitFor(), 0);
        // A send whose tensor's scope closes before the receiver has even posted its receive.
        c.barrier();
        if (n > 1) {
            if (me == 0) {
                try (PointerScope scope = new PointerScope()) {
                    sent = c.isend(Data.wide(ScalarType.Float, shape, seed(me, 1, 1)), 1, tag + 1);
                }
                for (int k = 0; k < 4; k++) {
                    reuse.set(k, Data.filled(ScalarType.Float, shape).fill_(new Scalar(-9.0)));
                }
                c.send(Data.filled(ScalarType.Int, 1), 1, tag + 2); // "go": only now is it received
                sent.waitFor();
            } else if (me == 1) {
                c.recv(0, tag + 2);
                check.tensorsClose("a sent tensor whose scope closed before the receive was posted",
                        Data.wide(ScalarType.Float, shape, seed(0, 1, 1)), c.recv(0, tag + 1), 0);
            }
        }
    }

    /** A serializable message with per-rank content. */
    record Msg(int from, int to, String text, List<Integer> values) implements Serializable {
    }

    static Msg msg(int from, int to) {
        List<Integer> values = new ArrayList<>();
        for (int i = 0; i <= from + to; i++) {
            values.add(from * 100 + to * 10 + i);
        }
        return new Msg(from, to, "from " + from + " to " + to, values);
    }

    static String bigText(int from, int to) {
        return ("<" + from + "->" + to + ">").repeat(500);
    }

    /** Bad peers, blocking self-traffic and mismatched receives: clear messages, no stray data. */
    static void badInputs(Communicator c, Check check, int tag, String prefix) throws Exception {
        int me = c.rank();
        int n = c.size();
        Tensor x = Data.wide(ScalarType.Float, new long[] {2, 3}, me);
        for (int peer : new int[] {n, -1, n + 3}) {
            String range = "[0, " + n + ")";
            String p = "peer rank " + peer;
            check.throwsWith(prefix + "send to " + peer, () -> c.send(x, peer, tag), "send", "rank " + me, p, range);
            check.throwsWith(prefix + "recv from " + peer, () -> c.recv(peer, tag), "recv", "rank " + me, p, range);
            check.throwsWith(prefix + "recvInto from " + peer, () -> c.recvInto(x.clone(), peer, tag), "recv",
                    "rank " + me, p, range);
            check.throwsWith(prefix + "isend to " + peer, () -> c.isend(x, peer, tag), "isend", "rank " + me, p, range);
            check.throwsWith(prefix + "irecv from " + peer, () -> c.irecv(peer, tag), "irecv", "rank " + me, p, range);
            check.throwsWith(prefix + "sendObj to " + peer, () -> c.sendObj("x", peer, tag), "send", p, range);
        }
        int other = (me + 1) % n;
        for (long badTag : new long[] {-1, (long) c.maxTag() + 1}) {
            if (badTag > Integer.MAX_VALUE) {
                continue; // MPI_TAG_UB is already the largest int
            }
            int t = (int) badTag;
            String said = "tag " + t + " is outside [0, " + c.maxTag() + "]";
            check.throwsWith(prefix + "send with tag " + t, () -> c.send(x, other, t), "send", "rank " + me, said);
            check.throwsWith(prefix + "recv with tag " + t, () -> c.recv(other, t), "recv", "rank " + me, said);
            check.throwsWith(prefix + "isend with tag " + t, () -> c.isend(x, other, t), "isend", said);
            check.throwsWith(prefix + "irecv with tag " + t, () -> c.irecv(other, t), "irecv", said);
        }
        check.isTrue(prefix + "maxTag is at least the standard's 32767", c.maxTag() >= 32767, "maxTag() = " + c.maxTag());
        check.throwsWith(prefix + "blocking send to oneself", () -> c.send(x, me, tag), "send", "rank " + me,
                "oneself");
        check.throwsWith(prefix + "blocking recv from oneself", () -> c.recv(me, tag), "recv", "rank " + me,
                "oneself");
        check.throwsWith(prefix + "blocking sendObj to oneself", () -> c.sendObj("x", me, tag), "send",
                "oneself");
        // A tensor that cannot be sent: the sender throws and tells the receiver, whose receive
        // throws instead of waiting; later receives on the tag go on, in order.
        forEachPair(c, (peer, first) -> {
            for (int round = 0; round < 2; round++) {
                if ((round == 0) == first) {
                    Tensor complex = Data.empty(ScalarType.ComplexFloat, 2);
                    check.throwsWith(prefix + "send of complex64 to " + peer, () -> c.send(complex, peer, tag), "send",
                            "cannot be communicated", "rank " + peer + "'s receive fails");
                    check.throwsWith(prefix + "isend of null to " + peer, () -> c.isend(null, peer, tag), "isend", "null");
                    c.send(Data.wide(ScalarType.Int, new long[] {3}, seed(me, peer, 99)), peer, tag);
                    c.send(Data.wide(ScalarType.Float, new long[] {3}, seed(me, peer, 98)), peer, tag);
                    c.send(Data.wide(ScalarType.Float, new long[] {3}, seed(me, peer, 97)), peer, tag);
                } else {
                    String passed = "rank " + peer + " passed a tensor that cannot be sent";
                    check.throwsWith(prefix + "recv of complex64 from " + peer, () -> c.recv(peer, tag), "recv", passed);
                    RecvHandle unsendable = c.irecv(peer, tag);
                    RecvHandle next = c.irecv(peer, tag);
                    check.tensorsClose(prefix + "irecv posted after one of null completes",
                            Data.wide(ScalarType.Int, new long[] {3}, seed(peer, me, 99)), next.waitFor(), 0);
                    check.throwsWith(prefix + "irecv of null from " + peer, unsendable::waitFor, "irecv", passed);
                    check.throwsWith(prefix + "test() of that irecv", unsendable::test, "irecv", passed);
                    // Into a sparse tensor of the sent dtype and shape: refused, the message consumed.
                    Tensor sparse = Data.filled(ScalarType.Float, 3).to_sparse();
                    check.throwsWith(prefix + "recvInto a sparse tensor from " + peer, () -> c.recvInto(sparse, peer, tag),
                            "recv", "rank " + peer + " sent float32[3]", "Sparse");
                    check.tensorsClose(prefix + "next message intact after a sparse recvInto",
                            Data.wide(ScalarType.Float, new long[] {3}, seed(peer, me, 97)), c.recv(peer, tag), 0);
                }
            }
        });
        // The mismatches: dtype, shape, and shape of a payload-path (large) message. After each, the
        // next message on the same tag must arrive intact: the bad one was consumed whole.
        record Bad(ScalarType sent, long[] sentShape, ScalarType into, long[] intoShape) {
        }
        List<Bad> bads = List.of(
                new Bad(ScalarType.Float, new long[] {2, 3}, ScalarType.Double, new long[] {2, 3}),
                new Bad(ScalarType.Int, new long[] {4, 5}, ScalarType.Int, new long[] {5, 4}),
                new Bad(ScalarType.Float, new long[] {30, 40}, ScalarType.Float, new long[] {40, 30}),
                new Bad(ScalarType.Long, new long[] {}, ScalarType.Long, new long[] {1}),
                new Bad(ScalarType.Half, new long[] {0, 3}, ScalarType.BFloat16, new long[] {0, 3}));
        forEachPair(c, (peer, first) -> {
            for (int round = 0; round < 2; round++) {
                if ((round == 0) == first) {
                    for (int k = 0; k < bads.size(); k++) {
                        Bad b = bads.get(k);
                        c.send(Data.wide(b.sent, b.sentShape, seed(me, peer, k)), peer, tag);
                        c.send(Data.wide(ScalarType.Int, new long[] {3}, seed(me, peer, k)), peer, tag);
                    }
                } else {
                    for (int k = 0; k < bads.size(); k++) {
                        Bad b = bads.get(k);
                        String sent = Data.describe(b.sent, b.sentShape);
                        String into = Data.describe(b.into, b.intoShape);
                        Tensor target = Data.filled(b.into, b.intoShape);
                        check.throwsWith(prefix + "recvInto " + into + " of " + sent + " from " + peer,
                                () -> c.recvInto(target, peer, tag), "recv", "rank " + me, "rank " + peer,
                                sent, into);
                        check.tensorsClose(prefix + "target untouched after " + sent + " into " + into,
                                Data.filled(b.into, b.intoShape), target, 0);
                        check.tensorsClose(prefix + "next message intact after " + sent + " into " + into,
                                Data.wide(ScalarType.Int, new long[] {3}, seed(peer, me, k)), c.recv(peer, tag), 0);
                    }
                }
            }
        });
    }

    @Override
    public Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = new LinkedHashMap<>();
        List<Item> items = Data.items(SHAPES, TRANSPOSED);
        List<Item> chunkItems = Data.items(CHUNK_SHAPES, CHUNK_TRANSPOSED);

        s.put("blocking send/recv of every dtype and shape", (c, check) -> {
            if (c.size() == 1) {
                check.throwsWith("blocking send to oneself refused",
                        () -> c.send(Data.wide(ScalarType.Float, new long[] {2}, 0), 0, 10), "send", "rank 0",
                        "oneself");
                return;
            }
            blockingMatrix(c, check, items, 10, "");
        });

        s.put("isend/irecv of every dtype and shape with every rank and oneself", (c, check) ->
                nonblockingMatrix(c, check, items, 20, ""));

        s.put("outstanding irecvs from one source and tag complete in posting order", (c, check) ->
                ordering(c, check, 30, ""));

        s.put("an irecv, then blocking receives on the same source and tag: each gets its own message",
                (c, check) -> irecvThenRecv(c, check, 32));

        s.put("tensors of nonblocking transfers outlive the caller's PointerScope", (c, check) ->
                transfersOutliveScopes(c, check, 34));

        s.put("nonblocking traffic overlaps computation, driven by test()", (c, check) -> {
            int n = c.size();
            int me = c.rank();
            int next = (me + 1) % n;
            int prev = (me + n - 1) % n;
            Tensor big = Data.wide(ScalarType.Float, new long[] {256, 256}, seed(me, next, 0));
            Tensor small = Data.wide(ScalarType.Double, new long[] {5}, seed(me, next, 1));
            RecvHandle rBig = c.irecv(prev, 40);
            RecvHandle rSmall = c.irecv(prev, 41);
            SendHandle sBig = c.isend(big, next, 40);
            SendHandle sSmall = c.isend(small, next, 41);
            Tensor a = Data.small(ScalarType.Float, new long[] {64, 64}, me);
            Tensor b = Data.small(ScalarType.Float, new long[] {64, 64}, me + 1);
            Tensor product = a.matmul(b);
            Tensor acc = Data.empty(ScalarType.Float, 64, 64).fill_(new Scalar(0.0));
            int iterations = 0;
            long deadline = System.nanoTime() + 30_000_000_000L;
            boolean complete = false;
            while (!complete && System.nanoTime() < deadline) {
                acc = acc.add(a.matmul(b));
                iterations++;
                // Each poll is an MPI call: without a progress thread it is what moves the data.
                boolean r1 = rBig.test();
                boolean r2 = rSmall.test();
                boolean s1 = sBig.test();
                boolean s2 = sSmall.test();
                complete = r1 && r2 && s1 && s2;
            }
            check.isTrue("completed by test() alone while computing", complete,
                    "transfers still incomplete after 30 s of polling");
            if (!complete) {
                rBig.waitFor();
                rSmall.waitFor();
                sBig.waitFor();
                sSmall.waitFor();
            }
            check.tensorsClose("large tensor from " + prev,
                    Data.wide(ScalarType.Float, new long[] {256, 256}, seed(prev, me, 0)), rBig.get(), 0);
            check.tensorsClose("small tensor from " + prev,
                    Data.wide(ScalarType.Double, new long[] {5}, seed(prev, me, 1)), rSmall.get(), 0);
            check.tensorsClose("computation during the transfer", product.mul(new Scalar((double) iterations)),
                    acc, 1e-5);
            check.tensorsClose("sent tensor unchanged",
                    Data.wide(ScalarType.Float, new long[] {256, 256}, seed(me, next, 0)), big, 0);
        });

        // Large payloads (rendezvous): the sender's send completes only once the receiver's payload
        // receive is posted, which needs the header first. Correct MPI programs, which must not
        // depend on this rank calling test() or waitFor() at the right moment.
        s.put("an irecv completes while its rank waits in a collective (4 MiB ring)", (c, check) -> {
            int me = c.rank(), next = (me + 1) % c.size(), prev = (me + c.size() - 1) % c.size();
            RecvHandle h = c.irecv(prev, 90);
            c.isend(Data.wide(ScalarType.Float, new long[] {1024, 1024}, seed(me, next, 90)), next, 90).waitFor();
            c.barrier();
            check.tensorsClose("tensor from " + prev, Data.wide(ScalarType.Float, new long[] {1024, 1024}, seed(prev, me, 90)),
                    h.waitFor(), 0);
        });
        s.put("irecvs waited on in the reverse order of their sends (4 MiB ring)", (c, check) -> {
            int me = c.rank(), next = (me + 1) % c.size(), prev = (me + c.size() - 1) % c.size();
            RecvHandle first = c.irecv(prev, 91);
            RecvHandle second = c.irecv(prev, 92);
            c.isend(Data.wide(ScalarType.Float, new long[] {1024, 1024}, seed(me, next, 91)), next, 91).waitFor();
            c.isend(Data.wide(ScalarType.Double, new long[] {512, 1024}, seed(me, next, 92)), next, 92).waitFor();
            check.tensorsClose("second tensor from " + prev, Data.wide(ScalarType.Double, new long[] {512, 1024}, seed(prev, me, 92)),
                    second.waitFor(), 0);
            check.tensorsClose("first tensor from " + prev, Data.wide(ScalarType.Float, new long[] {1024, 1024}, seed(prev, me, 91)),
                    first.waitFor(), 0);
        });

        // The receive progress thread may sweep a receive the moment it is posted: one it saw
        // before learning of its predecessor would take the predecessor's payload (payloads of
        // different sizes here, so that shows). Rare per receive, hence many of them.
        s.put("irecvs posted while their headers wait, " + RACE_ROUNDS + " rounds", (c, check) -> {
            int n = c.size(), me = c.rank(), next = (me + 1) % n, prev = (me + n - 1) % n, k = RACE_RECEIVES;
            String firstBad = null;
            for (int round = 0; round < RACE_ROUNDS; round++) {
                try (PointerScope scope = new PointerScope()) {
                    List<SendHandle> sends = new ArrayList<>();
                    for (int i = 0; i < k; i++) {
                        sends.add(c.isend(Data.wide(ScalarType.Float, new long[] {300 + 20 * i}, seed(me, next, i)), next, 95));
                    }
                    c.barrier(); // the headers are queued before the receives are posted
                    RecvHandle[] hs = new RecvHandle[k];
                    for (int i = 0; i < k; i++) {
                        hs[i] = c.irecv(prev, 95);
                    }
                    for (int i = k - 1; i >= 0; i--) {
                        Tensor want = Data.wide(ScalarType.Float, new long[] {300 + 20 * i}, seed(prev, me, i));
                        Tensor got = hs[i].waitFor();
                        if (firstBad == null && !got.equal(want)) {
                            firstBad = "round " + round + ", message " + i + ": got " + Arrays.toString(got.sizes().vec().get())
                                    + " where " + Arrays.toString(want.sizes().vec().get()) + " was sent";
                        }
                    }
                    for (SendHandle h : sends) {
                        h.waitFor();
                    }
                }
            }
            check.isTrue("every message in its own receive", firstBad == null, firstBad);
        });

        // Each receive of a (source, tag) posts its predecessors' payload receives first: a chain
        // as long as the receives waiting on the pair, which must not be walked by recursion.
        s.put(DEEP_RECEIVES + " irecvs of one (source, tag) posted before any header", (c, check) -> {
            int n = c.size(), me = c.rank(), next = (me + 1) % n, prev = (me + n - 1) % n;
            try (PointerScope scope = new PointerScope()) {
                RecvHandle[] hs = new RecvHandle[DEEP_RECEIVES];
                for (int i = 0; i < DEEP_RECEIVES; i++) {
                    hs[i] = c.irecv(prev, 96);
                }
                c.barrier(); // every receive waits (and is swept) before the first header is sent
                List<SendHandle> sends = new ArrayList<>();
                for (int i = 0; i < DEEP_RECEIVES; i++) {
                    sends.add(c.isend(Data.wide(ScalarType.Int, new long[] {2}, seed(me, next, i)), next, 96));
                }
                String firstBad = null;
                for (int i = DEEP_RECEIVES - 1; i >= 0; i--) { // the newest first: it posts all the others
                    Tensor got = hs[i].waitFor();
                    if (firstBad == null && !got.equal(Data.wide(ScalarType.Int, new long[] {2}, seed(prev, me, i)))) {
                        firstBad = "message " + i + " has the values of another";
                    }
                }
                for (SendHandle h : sends) {
                    h.waitFor();
                }
                check.isTrue("every message in its own receive", firstBad == null, firstBad);
            }
        });

        // A program that never completes an isend still must not have MPI read freed memory: the
        // transposed tensor is sent from a copy that only the dropped handle refers to, which the
        // collector would otherwise free (and the allocations after it reuse) before the peer receives.
        s.put("a dropped isend's tensor stays alive until it is received", (c, check) -> {
            int n = c.size(), me = c.rank(), next = (me + 1) % n, prev = (me + n - 1) % n;
            long[] shape = {1024, 1024};
            try (PointerScope scope = new PointerScope()) {
                c.isend(Data.wide(ScalarType.Float, shape, seed(me, next, 97)).t(), next, 97);
            }
            for (int i = 0; i < 3; i++) {
                System.gc();
                Thread.sleep(100);
            }
            try (PointerScope scope = new PointerScope()) {
                for (int i = 0; i < 4; i++) {
                    Data.empty(ScalarType.Float, shape[0], shape[1]).fill_(new Scalar(-1.0));
                }
                c.barrier();
                check.tensorsClose("tensor from " + prev, Data.wide(ScalarType.Float, shape, seed(prev, me, 97)).t(),
                        c.irecv(prev, 97).waitFor(), 0); // nonblocking: np=1 receives from itself
            }
        });

        // A receive dropped once its payload receive is posted, with the collector run before the
        // sender waits: the pair's next message still goes to the next receive. (Open MPI's
        // shared-memory transfer here completes the payload the moment its receive is posted, so
        // this does not reach the window in which a collected tensor would be written.)
        s.put("a dropped irecv leaves its pair in order", (c, check) -> {
            int n = c.size(), me = c.rank(), next = (me + 1) % n;
            c.irecv((me + n - 1) % n, 98);
            try (PointerScope scope = new PointerScope()) {
                SendHandle sent = c.isend(Data.wide(ScalarType.Float, new long[] {1024, 1024}, seed(me, next, 98)), next, 98);
                c.barrier(); // the headers are in: the progress thread posts the payload receives
                for (int i = 0; i < 3; i++) {
                    System.gc();
                    Thread.sleep(100);
                }
                sent.waitFor(); // returns once the peer's MPI wrote the payload into the tensor
                // The pair goes on: the next message goes to the next receive.
                RecvHandle second = c.irecv((me + n - 1) % n, 98);
                c.isend(Data.wide(ScalarType.Double, new long[] {300, 5}, seed(me, next, 99)), next, 98).waitFor();
                check.tensorsClose("next message on the pair",
                        Data.wide(ScalarType.Double, new long[] {300, 5}, seed((me + n - 1) % n, me, 99)), second.waitFor(), 0);
            }
        });

        s.put("recvInto existing tensors", (c, check) -> recvInto(c, check, 50, "", new long[] {30, 40}));

        s.put("sendObj/recvObj", (c, check) -> {
            int me = c.rank();
            if (c.size() == 1) {
                check.throwsWith("sendObj to oneself refused", () -> c.sendObj(msg(0, 0), 0, 60), "send",
                        "oneself");
                return;
            }
            forEachPair(c, (peer, first) -> {
                for (int round = 0; round < 2; round++) {
                    if ((round == 0) == first) {
                        c.sendObj(msg(me, peer), peer, 60);
                        c.sendObj(bigText(me, peer), peer, 60);
                        c.sendObj(new int[] {me, peer, me * peer}, peer, 61);
                    } else {
                        check.equal("record from " + peer, msg(peer, me), c.recvObj(peer, 60));
                        check.equal("large string from " + peer, bigText(peer, me), c.recvObj(peer, 60));
                        int[] arr = c.recvObj(peer, 61);
                        check.isTrue("int[] from " + peer, Arrays.equals(new int[] {peer, me, me * peer}, arr),
                                "got " + Arrays.toString(arr));
                    }
                }
            });
        });

        s.put("a program's own messages on MPI_COMM_WORLD never meet mn4j's", (c, check) -> {
            // The world Communicator wraps MPI_COMM_WORLD: a raw message with the same peer and tag,
            // sent first, must reach the raw receive, not mn4j's header receive, and back.
            int me = c.rank();
            if (c.size() == 1) { // to oneself, nonblocking: the raw message first again
                IntBuffer rawOut = ByteBuffer.allocateDirect(12).order(ByteOrder.nativeOrder()).asIntBuffer();
                rawOut.put(new int[] {0, 0, 7});
                Request raw = MPI.COMM_WORLD.iSend(rawOut, 3, MPI.INT, 0, 80);
                SendHandle sent = c.isend(Data.wide(ScalarType.Float, new long[] {5}, seed(0, 0, 7)), 0, 80);
                check.tensorsClose("mn4j tensor from oneself after a raw message",
                        Data.wide(ScalarType.Float, new long[] {5}, seed(0, 0, 7)), c.irecv(0, 80).waitFor(), 0);
                int[] got = new int[3];
                MPI.COMM_WORLD.recv(got, 3, MPI.INT, 0, 80);
                check.isTrue("raw message from oneself", Arrays.equals(new int[] {0, 0, 7}, got), "got " + Arrays.toString(got));
                raw.waitFor();
                sent.waitFor();
                return;
            }
            forEachPair(c, (peer, first) -> {
                for (int round = 0; round < 2; round++) {
                    if ((round == 0) == first) {
                        MPI.COMM_WORLD.send(new int[] {me, peer, round}, 3, MPI.INT, peer, 80);
                        c.send(Data.wide(ScalarType.Float, new long[] {5}, seed(me, peer, round)), peer, 80);
                    } else {
                        check.tensorsClose("mn4j tensor from " + peer + " after a raw message",
                                Data.wide(ScalarType.Float, new long[] {5}, seed(peer, me, round)), c.recv(peer, 80), 0);
                        int[] raw = new int[3];
                        MPI.COMM_WORLD.recv(raw, 3, MPI.INT, peer, 80);
                        check.isTrue("raw message from " + peer, Arrays.equals(new int[] {peer, me, round}, raw),
                                "got " + Arrays.toString(raw));
                    }
                }
            });
        });

        s.put("bad inputs: peers out of range, blocking self-traffic, mismatched recvInto", (c, check) ->
                badInputs(c, check, 70, ""));

        s.put("chunked (16-byte chunks): every point-to-point operation again", (c, check) -> {
            check.throwsWith("chunk size not a multiple of 8", () -> c.setChunkBytes(12), "multiple of 8", "12");
            check.throwsWith("chunk size below 8", () -> c.setChunkBytes(0), "multiple of 8");
            c.setChunkBytes(16);
            c.barrier();
            try {
                check.equal("chunk size set", 16L, c.chunkBytes());
                blockingMatrix(c, check, chunkItems, 110, "chunked ");
                nonblockingMatrix(c, check, chunkItems, 120, "chunked ");
                ordering(c, check, 130, "chunked ");
                recvInto(c, check, 140, "chunked ", new long[] {9, 40});
                badInputs(c, check, 150, "chunked ");
                int me = c.rank();
                forEachPair(c, (peer, first) -> {
                    for (int round = 0; round < 2; round++) {
                        if ((round == 0) == first) {
                            c.sendObj(bigText(me, peer), peer, 160);
                        } else {
                            check.equal("chunked large object from " + peer, bigText(peer, me),
                                    c.recvObj(peer, 160));
                        }
                    }
                });
            } finally {
                c.barrier();
                c.setChunkBytes(Communicator.DEFAULT_CHUNK_BYTES);
            }
            check.equal("default chunk size restored", Communicator.DEFAULT_CHUNK_BYTES, c.chunkBytes());
        });

        s.put("per-rank chunk sizes (64 or 128 bytes): receivers split as their senders did", (c, check) -> {
            // Even ranks 128 then 64 bytes, odd ranks the other: every pair of neighbours sends both
            // ways, the lower rank first, so a sender's chunk is larger than its receiver's in one
            // direction and smaller in the other, either first.
            for (long even : new long[] {128, 64}) {
                c.setChunkBytes(c.rank() % 2 == 0 ? even : 192 - even);
                c.barrier();
                String p = "per-rank chunks (even ranks " + even + ") ";
                try {
                    blockingMatrix(c, check, chunkItems, 170, p);
                    nonblockingMatrix(c, check, chunkItems, 180, p);
                    ordering(c, check, 190, p);
                    recvInto(c, check, 200, p, new long[] {9, 40});
                } finally {
                    c.barrier();
                    c.setChunkBytes(Communicator.DEFAULT_CHUNK_BYTES);
                }
            }
            // The next operations, with equal chunk sizes again, find no stray chunk.
            blockingMatrix(c, check, chunkItems, 210, "after per-rank chunks ");
        });
        return s;
    }
}
