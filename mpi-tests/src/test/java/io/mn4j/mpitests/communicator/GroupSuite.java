package io.mn4j.mpitests.communicator;

import io.mn4j.communicator.CommStats;
import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.ReduceOp;
import io.mn4j.communicator.RecvHandle;
import io.mn4j.communicator.SendHandle;
import io.mn4j.mpitests.Check;
import io.mn4j.mpitests.Scenario;
import io.mn4j.mpitests.ScenarioSuite;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import mpi.MPI;
import mpi.MPIException;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * Groups and models: split communicators (even/odd ranks, reversed keys) running collectives
 * next to the world, node-local ranks, the model helpers bcastData, meanGrad and sumGrad, and the
 * per-operation counters for a known sequence of calls.
 */
public class GroupSuite implements ScenarioSuite {

    /** World ranks with the same parity as {@code rank}, in the order of key = -rank (descending). */
    static List<Integer> parityGroup(int size, int rank) {
        List<Integer> members = new ArrayList<>();
        for (int r = size - 1; r >= 0; r--) {
            if (r % 2 == rank % 2) {
                members.add(r);
            }
        }
        return members;
    }

    static void splitEvenOdd(Communicator c, Check check) {
        int me = c.rank();
        int n = c.size();
        List<Integer> members = parityGroup(n, me);
        try (Communicator sub = c.split(me % 2, -me)) {
            int m = sub.size();
            int sr = sub.rank();
            check.equal("sub size", members.size(), m);
            check.equal("sub rank ordered by reversed key", members.indexOf(me), sr);
            checkNodeRanks(sub, check, "sub ");

            // allgather: rank order of the sub-communicator, i.e. descending world ranks.
            List<Tensor> all = sub.allgather(Data.wide(ScalarType.Long, new long[] {me + 1}, me));
            for (int i = 0; i < Math.min(m, all.size()); i++) {
                int w = members.get(i);
                check.tensorsClose("sub allgather slot " + i + " is world rank " + w,
                        Data.wide(ScalarType.Long, new long[] {w + 1}, w), all.get(i), 0);
            }
            // A world collective between two sub collectives must not interfere with them.
            Tensor worldSum = c.allreduce(Data.small(ScalarType.Int, new long[] {3}, me), ReduceOp.SUM);
            check.tensorsClose("world allreduce amid sub collectives",
                    Data.reduce(Data.perRank(n, r -> Data.small(ScalarType.Int, new long[] {3}, r)), ReduceOp.SUM),
                    worldSum, 0);
            for (ReduceOp op : ReduceOp.values()) {
                Tensor got = sub.allreduce(Data.small(ScalarType.Double, new long[] {2, 2}, me), op);
                List<Tensor> inputs = new ArrayList<>();
                for (int w : members) {
                    inputs.add(Data.small(ScalarType.Double, new long[] {2, 2}, w));
                }
                check.tensorsClose("sub allreduce " + op, Data.reduce(inputs, op), got, 1e-12);
            }
            for (int root = 0; root < m; root++) {
                int w = members.get(root);
                Tensor b = sub.bcast(sr == root ? Data.wide(ScalarType.Half, new long[] {3, 2}, w) : null, root);
                check.tensorsClose("sub bcast from sub root " + root, Data.wide(ScalarType.Half, new long[] {3, 2}, w),
                        b, 0);
                List<Tensor> g = sub.gather(Data.wide(ScalarType.Int, new long[] {me}, me), root);
                if (sr == root) {
                    for (int i = 0; i < Math.min(m, g.size()); i++) {
                        int wi = members.get(i);
                        check.tensorsClose("sub gather at " + root + " slot " + i,
                                Data.wide(ScalarType.Int, new long[] {wi}, wi), g.get(i), 0);
                    }
                }
                List<Tensor> xs = null;
                if (sr == root) {
                    xs = new ArrayList<>();
                    for (int i = 0; i < m; i++) {
                        xs.add(Data.wide(ScalarType.Float, new long[] {i + 1, 2}, 10L * w + i));
                    }
                }
                check.tensorsClose("sub scatter from " + root,
                        Data.wide(ScalarType.Float, new long[] {sr + 1, 2}, 10L * w + sr), sub.scatter(xs, root), 0);
                Tensor red = sub.reduce(Data.small(ScalarType.Float, new long[] {4}, me), ReduceOp.MAX, root);
                if (sr == root) {
                    List<Tensor> inputs = new ArrayList<>();
                    for (int x : members) {
                        inputs.add(Data.small(ScalarType.Float, new long[] {4}, x));
                    }
                    check.tensorsClose("sub reduce MAX at " + root, Data.reduce(inputs, ReduceOp.MAX), red, 0);
                }
            }
            List<Tensor> xs = new ArrayList<>();
            for (int i = 0; i < m; i++) {
                xs.add(Data.wide(ScalarType.Byte, new long[] {i + sr}, 100L * me + members.get(i)));
            }
            List<Tensor> got = sub.alltoall(xs);
            for (int i = 0; i < Math.min(m, got.size()); i++) {
                int w = members.get(i);
                check.tensorsClose("sub alltoall from slot " + i,
                        Data.wide(ScalarType.Byte, new long[] {sr + i}, 100L * w + me), got.get(i), 0);
            }
            // Point to point inside the group, addressed by sub ranks, on a ring.
            int next = (sr + 1) % m;
            int prev = (sr + m - 1) % m;
            RecvHandle h = sub.irecv(prev, 3);
            SendHandle s = sub.isend(Data.wide(ScalarType.Float, new long[] {700}, me), next, 3);
            check.tensorsClose("sub ring irecv from sub rank " + prev,
                    Data.wide(ScalarType.Float, new long[] {700}, members.get(prev)), h.waitFor(), 0);
            s.waitFor();
            if (m > 1) {
                // Blocking, lower sub rank first, alternating: pairs (0,1), (2,3)... then the rest.
                if (sr % 2 == 0 && sr + 1 < m) {
                    sub.send(Data.wide(ScalarType.Bool, new long[] {5}, me), sr + 1, 4);
                    check.tensorsClose("sub blocking recv", Data.wide(ScalarType.Bool, new long[] {5},
                            members.get(sr + 1)), sub.recv(sr + 1, 4), 0);
                } else if (sr % 2 == 1) {
                    check.tensorsClose("sub blocking recv", Data.wide(ScalarType.Bool, new long[] {5},
                            members.get(sr - 1)), sub.recv(sr - 1, 4), 0);
                    sub.send(Data.wide(ScalarType.Bool, new long[] {5}, me), sr - 1, 4);
                }
                check.throwsWith("sub peer out of range", () -> sub.send(Data.wide(ScalarType.Float,
                        new long[] {1}, 0), m, 4), "send", "peer rank " + m, "[0, " + m + ")");
            }
            // Objects and chunked messages inside the group.
            check.equal("sub allgatherObj", members, sub.allgatherObj(me));
            sub.setChunkBytes(16);
            try {
                check.equal("world chunk size unaffected by the sub's", Communicator.DEFAULT_CHUNK_BYTES, c.chunkBytes());
                Tensor chunked = sub.allreduce(Data.small(ScalarType.Float, new long[] {50}, me), ReduceOp.SUM);
                List<Tensor> inputs = new ArrayList<>();
                for (int w : members) {
                    inputs.add(Data.small(ScalarType.Float, new long[] {50}, w));
                }
                check.tensorsClose("sub chunked allreduce", Data.reduce(inputs, ReduceOp.SUM), chunked, 0);
                List<Tensor> gathered = sub.allgather(Data.wide(ScalarType.Double, new long[] {me + 30}, me));
                for (int i = 0; i < Math.min(m, gathered.size()); i++) {
                    int w = members.get(i);
                    check.tensorsClose("sub chunked allgather slot " + i,
                            Data.wide(ScalarType.Double, new long[] {w + 30}, w), gathered.get(i), 0);
                }
            } finally {
                sub.setChunkBytes(Communicator.DEFAULT_CHUNK_BYTES);
            }
            // A nested split: the group split again by key = rank (natural order), one member each.
            try (Communicator solo = sub.split(sr, 0)) {
                check.equal("nested split of one rank: size", 1, solo.size());
                check.equal("nested split of one rank: rank", 0, solo.rank());
                check.tensorsClose("allreduce on one rank is the input",
                        Data.small(ScalarType.Float, new long[] {2}, me),
                        solo.allreduce(Data.small(ScalarType.Float, new long[] {2}, me), ReduceOp.PROD), 0);
            }
        }
        // The world still works after the sub-communicators are closed.
        List<Tensor> all = c.allgather(Data.wide(ScalarType.Int, new long[] {2}, me));
        for (int r = 0; r < n; r++) {
            check.tensorsClose("world allgather after closing subs: " + r,
                    Data.wide(ScalarType.Int, new long[] {2}, r), all.get(r), 0);
        }
    }

    /** Node-local ranks: in range, (interRank, intraRank) unique, node sizes adding up. */
    static void checkNodeRanks(Communicator c, Check check, String prefix) {
        int n = c.size();
        check.isTrue(prefix + "intraRank in [0, intraSize)", c.intraRank() >= 0 && c.intraRank() < c.intraSize(),
                c.intraRank() + " / " + c.intraSize());
        check.isTrue(prefix + "interRank in [0, interSize)", c.interRank() >= 0 && c.interRank() < c.interSize(),
                c.interRank() + " / " + c.interSize());
        check.isTrue(prefix + "intraSize in [1, size]", c.intraSize() >= 1 && c.intraSize() <= n,
                c.intraSize() + " of " + n);
        List<ArrayList<Integer>> all = c.allgatherObj(new ArrayList<>(List.of(c.interRank(), c.intraRank(), c.intraSize(),
                c.interSize())));
        Set<List<Integer>> pairs = new HashSet<>();
        for (List<Integer> e : all) {
            pairs.add(e.subList(0, 2));
        }
        check.equal(prefix + "(interRank, intraRank) unique", n, pairs.size());
        // Every node's ranks count once in the sum of intraSize / (its ranks).
        int nodes = 0;
        for (List<Integer> e : all) {
            if (e.get(1) == 0) {
                nodes++;
            }
        }
        check.equal(prefix + "interSize is the number of nodes (ranks with intraRank 0)", nodes, c.interSize());
        int total = 0;
        for (List<Integer> e : all) {
            if (e.get(1) == 0) {
                total += e.get(2);
            }
        }
        check.equal(prefix + "node sizes add up to size", n, total);
        // What the host names say (one host here; several on a simulated cluster): ChainerMN's
        // meaning, hosts numbered in the order of their first rank.
        List<String> hosts = c.allgatherObj(hostName());
        String mine = hosts.get(c.rank());
        List<String> distinct = hosts.stream().distinct().toList();
        check.equal(prefix + "intraSize is the number of ranks on this host", (int) hosts.stream().filter(mine::equals).count(),
                c.intraSize());
        check.equal(prefix + "intraRank counts the lower ranks on this host",
                (int) hosts.subList(0, c.rank()).stream().filter(mine::equals).count(), c.intraRank());
        check.equal(prefix + "interRank is this host's number", distinct.indexOf(mine), c.interRank());
        check.equal(prefix + "interSize is the number of hosts", distinct.size(), c.interSize());
    }

    private static String hostName() {
        try {
            return MPI.getProcessorName();
        } catch (MPIException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A module with two parameters and an int64 and a bool buffer, filled from a seed. */
    static Module customModule(long seed) {
        Module m = new Module();
        m.register_parameter("w", Data.wide(ScalarType.Float, new long[] {3, 4}, seed));
        m.register_parameter("v", Data.wide(ScalarType.Double, new long[] {5}, seed + 1));
        m.register_buffer("count", Data.wide(ScalarType.Long, new long[] {2}, seed + 2));
        m.register_buffer("mask", Data.wide(ScalarType.Bool, new long[] {3, 2}, seed + 3));
        return m;
    }

    static void bcastData(Communicator c, Check check) {
        int me = c.rank();
        for (int root = 0; root < c.size(); root++) {
            torch.manual_seed(1000 + me);
            LinearImpl lin = new LinearImpl(4, 3);
            c.bcastData(lin, root);
            torch.manual_seed(1000 + root);
            LinearImpl expected = new LinearImpl(4, 3);
            check.tensorsClose("linear weight from root " + root, expected.weight(), lin.weight(), 0);
            check.tensorsClose("linear bias from root " + root, expected.bias(), lin.bias(), 0);
            check.isTrue("weight still a leaf requiring grad", lin.weight().requires_grad() && lin.weight().is_leaf(),
                    "requires_grad " + lin.weight().requires_grad() + ", leaf " + lin.weight().is_leaf());

            Module mine = customModule(10L * me);
            c.bcastData(mine, root);
            Module theirs = customModule(10L * root);
            TensorVector got = mine.parameters(true);
            TensorVector want = theirs.parameters(true);
            for (long i = 0; i < want.size(); i++) {
                check.tensorsClose("custom parameter " + i + " from root " + root, want.get(i), got.get(i), 0);
            }
            TensorVector gotB = mine.buffers(true);
            TensorVector wantB = theirs.buffers(true);
            check.equal("custom buffer count", wantB.size(), gotB.size());
            for (long i = 0; i < Math.min(wantB.size(), gotB.size()); i++) {
                check.tensorsClose("custom buffer " + i + " from root " + root, wantB.get(i), gotB.get(i), 0);
            }
        }
    }

    static void sumGrad(Communicator c, Check check) {
        int me = c.rank();
        int n = c.size();
        Module m = new Module();
        Tensor w1 = Data.small(ScalarType.Float, new long[] {3, 4}, 1);
        Tensor w3 = Data.small(ScalarType.Float, new long[] {2, 2}, 3);
        m.register_parameter("w1", w1);
        m.register_parameter("w3", w3);
        Tensor loss = w1.mul(grad1(me)).sum();
        if (me % 2 == 1) {
            loss = loss.add(w3.mul(grad3(me)).sum());
        }
        loss.backward();
        c.sumGrad(m);
        check.tensorsClose("w1 grad is the sum", Data.reduce(Data.perRank(n, GroupSuite::grad1), ReduceOp.SUM), w1.grad(), 1e-5);
        Tensor sum3 = Data.empty(ScalarType.Float, 2, 2).fill_(new Scalar(0.0));
        for (int r = 1; r < n; r += 2) {
            sum3 = sum3.add(grad3(r));
        }
        check.isTrue("w3 grad defined after sumGrad", w3.grad().defined(), "still undefined");
        if (w3.grad().defined()) {
            check.tensorsClose("w3 grad is the sum with missing ones as zeros", sum3, w3.grad(), 1e-5);
        }
    }

    static void meanGrad(Communicator c, Check check) {
        int me = c.rank();
        int n = c.size();
        // Gradients set by backward of a known loss; w3 gets none on even ranks.
        // Keep our own handles: the references register_parameter returns point into the module's
        // parameter list and dangle once it grows.
        Module m = new Module();
        Tensor w1 = Data.small(ScalarType.Float, new long[] {3, 4}, 1);
        Tensor w2 = Data.small(ScalarType.Float, new long[] {5}, 2);
        Tensor w3 = Data.small(ScalarType.Float, new long[] {2, 2}, 3);
        m.register_parameter("w1", w1);
        m.register_parameter("w2", w2);
        m.register_parameter("w3", w3);
        // A float64 parameter (the flattened gradients are promoted to float64) without a
        // gradient on even ranks, and a bfloat16 one with gradients everywhere: every gradient
        // must keep its parameter's dtype.
        Tensor w4 = Data.small(ScalarType.Float, new long[] {4}, 4);
        Tensor w5 = Data.small(ScalarType.Double, new long[] {3}, 5);
        Tensor w6 = Data.small(ScalarType.BFloat16, new long[] {2}, 6);
        m.register_parameter("w4", w4);
        m.register_parameter("w5", w5);
        m.register_parameter("w6", w6);
        Tensor loss = w1.mul(grad1(me)).sum().add(w2.mul(grad2(me)).sum());
        if (me % 2 == 1) {
            loss = loss.add(w3.mul(grad3(me)).sum()).add(w5.mul(grad5(me)).sum().to(ScalarType.Float));
        }
        loss = loss.add(w6.mul(grad6(me)).sum().to(ScalarType.Float));
        loss.backward();
        check.isTrue("w3 has no gradient on even ranks before meanGrad", w3.grad().defined() == (me % 2 == 1),
                "defined: " + w3.grad().defined());
        c.meanGrad(m);
        check.tensorsClose("w1 grad is the mean",
                Data.reduce(Data.perRank(n, GroupSuite::grad1), ReduceOp.MEAN), w1.grad(), 1e-6);
        check.tensorsClose("w2 grad is the mean",
                Data.reduce(Data.perRank(n, GroupSuite::grad2), ReduceOp.MEAN), w2.grad(), 1e-6);
        Tensor sum3 = Data.empty(ScalarType.Float, 2, 2).fill_(new Scalar(0.0));
        for (int r = 1; r < n; r += 2) {
            sum3 = sum3.add(grad3(r));
        }
        check.isTrue("w3 grad defined after meanGrad", w3.grad().defined(), "still undefined");
        if (w3.grad().defined()) {
            check.tensorsClose("w3 grad is the mean with missing ones as zeros",
                    sum3.div(new Scalar((double) n)), w3.grad(), 1e-6);
        }

        check.isTrue("w4 (never a gradient) gets zeros", w4.grad().defined() && w4.grad().abs().sum().item_double() == 0,
                "w4 grad " + (w4.grad().defined() ? w4.grad().abs().sum().item_double() : "undefined"));
        Tensor sum5 = Data.empty(ScalarType.Double, 3).fill_(new Scalar(0.0));
        for (int r = 1; r < n; r += 2) {
            sum5 = sum5.add(grad5(r));
        }
        check.tensorsClose("float64 w5 grad is the mean, dtype kept", sum5.div(new Scalar((double) n)), w5.grad(), 1e-12);
        check.tensorsClose("bfloat16 w6 grad is the mean, dtype kept",
                Data.reduce(Data.perRank(n, GroupSuite::grad6), ReduceOp.MEAN), w6.grad(), 1e-2);
        for (Tensor w : new Tensor[] {w1, w2, w3, w4, w5, w6}) {
            check.equal("grad dtype is the parameter's: " + Data.label(w.scalar_type()), Data.label(w.scalar_type()),
                    w.grad().defined() ? Data.label(w.grad().scalar_type()) : "undefined");
        }

        // End to end on a Linear layer: same initial weights, per-rank inputs, one backward.
        torch.manual_seed(7);
        LinearImpl lin = new LinearImpl(4, 3);
        Tensor y = lin.forward(linInput(me));
        y.mul(linOutGrad(me)).sum().backward();
        c.meanGrad(lin);
        Tensor dw = Data.empty(ScalarType.Float, 3, 4).fill_(new Scalar(0.0));
        Tensor db = Data.empty(ScalarType.Float, 3).fill_(new Scalar(0.0));
        for (int r = 0; r < n; r++) {
            dw = dw.add(linOutGrad(r).t().matmul(linInput(r)));
            db = db.add(linOutGrad(r).sum(0));
        }
        check.tensorsClose("linear weight grad is the mean", dw.div(new Scalar((double) n)), lin.weight().grad(), 1e-5);
        check.tensorsClose("linear bias grad is the mean", db.div(new Scalar((double) n)), lin.bias().grad(), 1e-5);
    }

    static Tensor grad1(int r) {
        return Data.small(ScalarType.Float, new long[] {3, 4}, 11L * r + 5);
    }

    static Tensor grad2(int r) {
        return Data.small(ScalarType.Float, new long[] {5}, 13L * r + 6);
    }

    static Tensor grad3(int r) {
        return Data.small(ScalarType.Float, new long[] {2, 2}, 17L * r + 7);
    }

    static Tensor grad5(int r) {
        return Data.small(ScalarType.Double, new long[] {3}, 29L * r + 8);
    }

    static Tensor grad6(int r) {
        return Data.small(ScalarType.BFloat16, new long[] {2}, 31L * r + 9);
    }

    static Tensor linInput(int r) {
        return Data.small(ScalarType.Float, new long[] {2, 4}, 19L * r + 1);
    }

    static Tensor linOutGrad(int r) {
        return Data.small(ScalarType.Float, new long[] {2, 3}, 23L * r + 2);
    }

    static void expectOp(Check check, Map<String, CommStats.OpStats> snap, String op, long calls, long sent,
            long received) {
        CommStats.OpStats s = snap.get(op);
        if (s == null) {
            check.isTrue("counters of " + op, calls == 0, "no counters for " + op + " in " + snap.keySet());
            return;
        }
        check.equal(op + " calls", calls, s.calls());
        check.equal(op + " bytes sent", sent, s.bytesSent());
        check.equal(op + " bytes received", received, s.bytesReceived());
        check.isTrue(op + " seconds", s.seconds() >= 0 && s.seconds() < 60, "seconds " + s.seconds());
    }

    static void counters(Communicator c, Check check) {
        int me = c.rank();
        int n = c.size();
        int next = (me + 1) % n;
        int prev = (me + n - 1) % n;
        c.barrier();
        c.stats().reset();
        check.equal("empty after reset", 0, c.stats().snapshot().size());

        c.allreduce(Data.small(ScalarType.Float, new long[] {10}, me), ReduceOp.SUM); // 40 B
        c.allreduce(Data.small(ScalarType.Double, new long[] {3}, me), ReduceOp.MAX); // 24 B
        Tensor inPlace = Data.small(ScalarType.Float, new long[] {5}, me);
        c.allreduceInto(inPlace, inPlace, ReduceOp.SUM); // 20 B, counted as an allreduce
        c.bcast(me == 0 ? Data.wide(ScalarType.Double, new long[] {5}, 0) : null, 0); // 40 B
        c.reduce(Data.small(ScalarType.Int, new long[] {6}, me), ReduceOp.SUM, n - 1); // 24 B
        c.allgather(Data.wide(ScalarType.Long, new long[] {me + 1}, me)); // 8(r+1) B from rank r
        c.gather(Data.wide(ScalarType.Byte, new long[] {me + 3}, me), 0); // r+3 B from rank r
        List<Tensor> xs = new ArrayList<>();
        for (int d = 0; d < n; d++) {
            xs.add(Data.wide(ScalarType.Int, new long[] {me + d + 1}, d)); // 4(me+d+1) B to d
        }
        c.alltoall(xs);
        c.allgatherInto(Data.small(ScalarType.Float, new long[] {4}, me), Data.empty(ScalarType.Float, n, 4)); // 16 B
        c.alltoallInto(Data.small(ScalarType.Int, new long[] {2L * n}, me), Data.empty(ScalarType.Int, 2L * n)); // 8 B blocks
        c.scatter(me == 0 ? Data.perRank(n, r -> Data.wide(ScalarType.Half, new long[] {r + 2}, r)) : null, 0);
        c.barrier();
        c.barrier();
        // Point to point on a ring (n = 1: with oneself, nonblocking only).
        RecvHandle r1 = c.irecv(prev, 9);
        RecvHandle r2 = c.irecv(prev, 9);
        SendHandle s1 = c.isend(Data.wide(ScalarType.Float, new long[] {me + 100}, me), next, 9);
        SendHandle s2 = c.isend(Data.wide(ScalarType.Float, new long[] {3}, me), next, 9);
        r1.waitFor();
        r2.waitFor();
        s1.waitFor();
        s2.waitFor();
        if (n > 1) {
            if (me % 2 == 0) {
                c.send(Data.wide(ScalarType.Int, new long[] {7}, me), next, 8);
                c.recv(prev, 8);
            } else {
                c.recv(prev, 8);
                c.send(Data.wide(ScalarType.Int, new long[] {7}, me), next, 8);
            }
        }
        Map<String, CommStats.OpStats> snap = c.stats().snapshot();

        expectOp(check, snap, "allreduce", 3, 84, 84);
        expectOp(check, snap, "bcast", 1, me == 0 ? 40L * (n - 1) : 0, me == 0 ? 0 : 40);
        expectOp(check, snap, "reduce", 1, me == n - 1 ? 0 : 24, me == n - 1 ? 24 : 0);
        long allgatherIn = 0;
        long gatherIn = 0;
        long alltoallOut = 0;
        long alltoallIn = 0;
        long scatterOut = 0;
        for (int r = 0; r < n; r++) {
            if (r != me) {
                allgatherIn += 8L * (r + 1);
                gatherIn += r + 3;
                alltoallOut += 4L * (me + r + 1);
                alltoallIn += 4L * (r + me + 1);
                scatterOut += 2L * (r + 2);
            }
        }
        // allgatherInto and alltoallInto count as allgather and alltoall.
        expectOp(check, snap, "allgather", 2, 8L * (me + 1) * (n - 1) + 16L * (n - 1), allgatherIn + 16L * (n - 1));
        expectOp(check, snap, "gather", 1, me == 0 ? 0 : me + 3, me == 0 ? gatherIn : 0);
        expectOp(check, snap, "alltoall", 2, alltoallOut + 8L * (n - 1), alltoallIn + 8L * (n - 1));
        expectOp(check, snap, "scatter", 1, me == 0 ? scatterOut : 0, me == 0 ? 0 : 2L * (me + 2));
        // barrier: the two explicit ones (the snapshot is taken before any other)
        expectOp(check, snap, "barrier", 2, 0, 0);
        expectOp(check, snap, "isend", 2, 4L * (me + 100) + 12, 0);
        expectOp(check, snap, "irecv", 2, 0, 4L * (prev + 100) + 12);
        // Blocking in waitFor counts under "wait", without bytes: both receives, and the sends not done before.
        CommStats.OpStats waits = snap.get(CommStats.WAIT);
        check.isTrue("wait: 2 to 4 calls, no bytes", waits != null && waits.calls() >= 2 && waits.calls() <= 4
                && waits.bytesSent() == 0 && waits.bytesReceived() == 0, String.valueOf(waits));
        expectOp(check, snap, "send", n > 1 ? 1 : 0, 28, 0);
        expectOp(check, snap, "recv", n > 1 ? 1 : 0, 0, 28);
        long sent = 0;
        long received = 0;
        for (CommStats.OpStats s : snap.values()) {
            sent += s.bytesSent();
            received += s.bytesReceived();
        }
        check.equal("total sent", sent, c.stats().totalBytesSent());
        check.equal("total received", received, c.stats().totalBytesReceived());

        // A sub-communicator counts on its own.
        try (Communicator sub = c.split(0, me)) {
            sub.allreduce(Data.small(ScalarType.Float, new long[] {2}, me), ReduceOp.SUM);
            Map<String, CommStats.OpStats> subSnap = sub.stats().snapshot();
            expectOp(check, subSnap, "allreduce", 1, 8, 8);
            check.equal("world allreduce count unchanged by the sub's", 3L,
                    c.stats().snapshot().get("allreduce").calls());
        }
    }

    /**
     * A negative color on the last rank (MPI.UNDEFINED on the one before it, with three ranks or
     * more): those ranks throw naming their color, the others get a communicator of their own
     * that works, and the world stays in step.
     */
    static void splitWithNegativeColor(Communicator c, Check check) {
        int me = c.rank();
        int n = c.size();
        int last = n - 1;
        int undefinedRank = n >= 3 ? n - 2 : -1;
        int color = me == last ? -1 : me == undefinedRank ? MPI.UNDEFINED : 0;
        int members = n - (undefinedRank < 0 ? 1 : 2);
        if (color < 0) {
            check.throwsWith("split with color " + color + " on rank " + me, () -> c.split(color, me).close(),
                    "split on rank " + me, "color " + color, "negative", me == undefinedRank ? "MPI.UNDEFINED" : "");
        } else {
            try (Communicator sub = c.split(color, me)) {
                check.equal("split without the negative colors: size", members, sub.size());
                check.equal("split without the negative colors: works", members, sub.allreduceObj(1, Integer::sum));
            }
        }
        check.equal("ranks in step afterwards", n, c.allreduceObj(1, Integer::sum));
    }

    /**
     * Every operation on a closed communicator is an IllegalStateException saying so (not an
     * MPI_ERR_COMM that ends the job); closing again does nothing; the world goes on.
     */
    static void closedCommunicator(Communicator c, Check check) {
        int me = c.rank();
        int n = c.size();
        Communicator sub = c.split(0, me);
        sub.close();
        Tensor x = Data.small(ScalarType.Float, new long[] {3}, me);
        Map<String, Runnable> ops = new LinkedHashMap<>();
        ops.put("barrier", sub::barrier);
        ops.put("allreduce", () -> sub.allreduce(x, ReduceOp.SUM));
        ops.put("allgather", () -> sub.allgather(x));
        ops.put("bcast", () -> sub.bcast(x, 0));
        ops.put("bcastInto", () -> sub.bcastInto(x, 0));
        ops.put("gather", () -> sub.gather(x, 0));
        ops.put("reduce", () -> sub.reduce(x, ReduceOp.SUM, 0));
        ops.put("split", () -> sub.split(0, 0));
        ops.put("irecv", () -> sub.irecv(me, 0));
        ops.put("isend", () -> sub.isend(x, me, 0));
        ops.put("allgatherObj", () -> sub.allgatherObj(me));
        for (Map.Entry<String, Runnable> op : ops.entrySet()) {
            check.throwsWith(op.getKey() + " after close", op.getValue(), "communicator closed", "rank " + me);
        }
        sub.close();
        check.tensorsClose("the input of the refused calls unchanged", Data.small(ScalarType.Float, new long[] {3}, me), x, 0);
        check.equal("ranks in step afterwards", n, c.allreduceObj(1, Integer::sum));
    }

    @Override
    public Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = new LinkedHashMap<>();
        s.put("node-local ranks of the world", (c, check) -> checkNodeRanks(c, check, ""));
        s.put("split even/odd with reversed keys: collectives and p2p inside", GroupSuite::splitEvenOdd);
        s.put("bcastData makes parameters and buffers equal to the root's", GroupSuite::bcastData);
        s.put("meanGrad averages gradients, missing ones as zeros", GroupSuite::meanGrad);
        s.put("sumGrad sums gradients, missing ones as zeros", GroupSuite::sumGrad);
        s.put("counters for a known sequence of calls", GroupSuite::counters);
        s.put("split with a negative color on some ranks: they throw, the others get communicators",
                GroupSuite::splitWithNegativeColor);
        s.put("a closed communicator refuses every operation", GroupSuite::closedCommunicator);
        return s;
    }
}
