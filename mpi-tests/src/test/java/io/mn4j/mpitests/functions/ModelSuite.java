package io.mn4j.mpitests.functions;

import static io.mn4j.mpitests.functions.DeterministicFixtures.F64;
import static io.mn4j.mpitests.functions.DeterministicFixtures.TOL;
import static io.mn4j.mpitests.functions.DeterministicFixtures.det;
import static io.mn4j.mpitests.functions.DeterministicFixtures.grad;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.ReduceOp;
import io.mn4j.functions.Functions;
import io.mn4j.functions.MultiNodeBatchNorm;
import io.mn4j.functions.MultiNodeChainList;
import io.mn4j.functions.MultiNodeOptimizer;
import io.mn4j.mpitests.Check;
import io.mn4j.mpitests.Scenario;
import io.mn4j.mpitests.ScenarioSuite;
import io.mn4j.mpitests.functions.DeterministicFixtures.Lin;
import io.mn4j.mpitests.functions.DeterministicFixtures.Params;
import io.mn4j.mpitests.functions.DeterministicFixtures.Worst;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.SGD;
import org.bytedeco.pytorch.SGDOptions;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.ScalarTypeOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptional;
import org.bytedeco.pytorch.global.torch;

/**
 * MultiNodeChainList in ChainerMN's topologies (cycle, cross, branching, twisted order, tuple
 * data), each for 100 iterations with the loss and every gradient compared to the one-process
 * model; the multi-node optimizer; the multi-node batch normalization with unequal batches.
 */
public class ModelSuite implements ScenarioSuite {
    private static final int D = 10;
    private static final int ITERATIONS = 100;

    @Override
    public Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = new LinkedHashMap<>();
        s.put("chain list: cycle", (c, check) -> run(c, check, new Cycle()));
        s.put("chain list: cross", (c, check) -> run(c, check, new Cross()));
        for (int variant = 1; variant <= 4; variant++) {
            int v = variant;
            s.put("chain list: branching " + v, (c, check) -> run(c, check, new Branching(v)));
        }
        s.put("chain list: twisted order", (c, check) -> run(c, check, new Twist()));
        s.put("chain list: tuple data", (c, check) -> run(c, check, new TupleData()));
        s.put("chain list: integer-only messages", (c, check) -> run(c, check, new LabelsAside()));
        s.put("optimizer: k steps equal one process", ModelSuite::optimizerMatchesOneProcess);
        s.put("optimizer: first step broadcasts rank 0", ModelSuite::optimizerBroadcastsFirst);
        s.put("optimizer: missing gradients count as zeros", ModelSuite::optimizerMissingGradients);
        s.put("batch norm: unequal batches", ModelSuite::batchNorm);
        s.put("batch norm: float16 with more samples than float16 can count", ModelSuite::batchNormHalf);
        return s;
    }

    // ------------------------------------------------------------------------------------------
    // Topologies

    /**
     * A topology: how rank r builds its list, and the one-process reference of every rank's loss.
     * Parameters are named "r{rank}.{name}", so a rank's own layers and the reference's copies of
     * them have the same values.
     */
    private interface Topology {
        /** Null if this rank takes no part. */
        MultiNodeChainList build(Communicator c, Params p);

        /** Whether rank r's list produces the model output (else it returns a delegate). */
        boolean hasOutput(int r, int n);

        /** Whether rank r's list uses the model input. */
        boolean usesInput(int r, int n);

        /** Loss of every rank in one process (null where a rank has none). */
        Tensor[] reference(Params p, Tensor x, Tensor t, int n);
    }

    private static Lin lin(Params p, int rank, String name, long out) {
        return p.get("r" + rank + "." + name, D, out, out == D);
    }

    private static MultiNodeChainList.Component one(Lin l) {
        return MultiNodeChainList.Component.of(l::apply);
    }

    /** Sums the inputs, then applies the layer (ChainerMN's BranchSubB). */
    private static MultiNodeChainList.Component sum(Lin l) {
        return xs -> List.of(l.apply(sumAll(xs)));
    }

    private static Tensor sumAll(List<Tensor> xs) {
        Tensor acc = xs.get(0);
        for (int i = 1; i < xs.size(); i++) {
            acc = acc.add(xs.get(i));
        }
        return acc;
    }

    private static int[] r(int... ranks) {
        return ranks;
    }

    /** Rank 0: A (input -> next), B (prev -> output, 2 classes); others: C (prev -> next). */
    private static final class Cycle implements Topology {
        public MultiNodeChainList build(Communicator c, Params p) {
            int n = c.size();
            int me = c.rank();
            MultiNodeChainList m = new MultiNodeChainList(c);
            if (me == 0) {
                m.add("A", null, one(lin(p, 0, "A", D)), null, r(1 % n));
                m.add("B", null, one(lin(p, 0, "B", 2)), r(n - 1), null);
            } else {
                m.add("C", null, one(lin(p, me, "C", D)), r(me - 1), r((me + 1) % n));
            }
            return m;
        }

        public boolean hasOutput(int r, int n) {
            return r == 0;
        }

        public boolean usesInput(int r, int n) {
            return r == 0;
        }

        public Tensor[] reference(Params p, Tensor x, Tensor t, int n) {
            Tensor h = lin(p, 0, "A", D).apply(x);
            for (int k = 1; k < n; k++) {
                h = lin(p, k, "C", D).apply(h);
            }
            Tensor[] loss = new Tensor[n];
            loss[0] = torch.mse_loss(lin(p, 0, "B", 2).apply(h), t);
            return loss;
        }
    }

    /** Rank 0: A (input -> next) then B (prev -> output); others B first, then A. */
    private static final class Cross implements Topology {
        public MultiNodeChainList build(Communicator c, Params p) {
            int n = c.size();
            int me = c.rank();
            MultiNodeChainList m = new MultiNodeChainList(c);
            MultiNodeChainList.Component a = one(lin(p, me, "A", D));
            MultiNodeChainList.Component b = one(lin(p, me, "B", 2));
            if (me == 0) {
                m.add("A", null, a, null, r((me + 1) % n));
                m.add("B", null, b, r((me + n - 1) % n), null);
            } else {
                m.add("B", null, b, r(me - 1), null);
                m.add("A", null, a, null, r((me + 1) % n));
            }
            return m;
        }

        public boolean hasOutput(int r, int n) {
            return true;
        }

        public boolean usesInput(int r, int n) {
            return true;
        }

        public Tensor[] reference(Params p, Tensor x, Tensor t, int n) {
            Tensor[] loss = new Tensor[n];
            for (int k = 0; k < n; k++) {
                Tensor a = lin(p, (k + n - 1) % n, "A", D).apply(x);
                loss[k] = torch.mse_loss(lin(p, k, "B", 2).apply(a), t);
            }
            return loss;
        }
    }

    /**
     * Rank 0 sends to its children and sums what they send back (ChainerMN's BranchParent1..4:
     * with and without passing through itself, in several orders); children: C (0 -> 0).
     */
    private static final class Branching implements Topology {
        private final int variant;

        Branching(int variant) {
            this.variant = variant;
        }

        /** The ranks the parent sends to and receives from, in order. */
        private int[] ranks(int n) {
            int[] children = IntStream.range(1, n).toArray();
            switch (variant) {
                case 1:
                    return children;
                case 2:
                    return IntStream.concat(IntStream.of(0), IntStream.of(children)).toArray();
                case 3:
                    return IntStream.concat(IntStream.of(children), IntStream.of(0)).toArray();
                default:
                    int[] list = IntStream.concat(IntStream.of(children), IntStream.of(0)).toArray();
                    int[] rotated = new int[list.length];
                    for (int i = 0; i < list.length; i++) {
                        rotated[i] = list[(i + 1) % list.length];
                    }
                    return rotated;
            }
        }

        public MultiNodeChainList build(Communicator c, Params p) {
            int n = c.size();
            int me = c.rank();
            if (variant == 1 && n == 1) {
                return null;
            }
            MultiNodeChainList m = new MultiNodeChainList(c);
            if (me == 0) {
                int[] ranks = ranks(n);
                m.add("A", null, one(lin(p, 0, "A", D)), null, ranks);
                if (variant != 1) {
                    m.add("A2", null, one(lin(p, 0, "A2", D)), r(0), r(0));
                }
                m.add("B", null, sum(lin(p, 0, "B", 2)), ranks, null);
            } else {
                m.add("C", null, one(lin(p, me, "C", D)), r(0), r(0));
            }
            return m;
        }

        public boolean hasOutput(int r, int n) {
            return r == 0;
        }

        public boolean usesInput(int r, int n) {
            return r == 0;
        }

        public Tensor[] reference(Params p, Tensor x, Tensor t, int n) {
            Tensor a = lin(p, 0, "A", D).apply(x);
            List<Tensor> inputs = new ArrayList<>();
            for (int k : ranks(n)) {
                inputs.add(k == 0 ? lin(p, 0, "A2", D).apply(a) : lin(p, k, "C", D).apply(a));
            }
            Tensor[] loss = new Tensor[n];
            loss[0] = torch.mse_loss(lin(p, 0, "B", 2).apply(sumAll(inputs)), t);
            return loss;
        }
    }

    /** ChainerMN's TwistFirst / Twist / TwistLast: sends and receives in crossing orders. */
    private static final class Twist implements Topology {
        public MultiNodeChainList build(Communicator c, Params p) {
            int n = c.size();
            int me = c.rank();
            int prev = (me + n - 1) % n;
            int next = (me + 1) % n;
            MultiNodeChainList m = new MultiNodeChainList(c);
            if (me == 0) {
                m.add("A1", null, one(lin(p, me, "A1", D)), null, r(next));
                m.add("A2", null, one(lin(p, me, "A2", 2)), r(next), null);
            } else if (me == n - 1) {
                m.add("U", null, one(lin(p, me, "U", 2)), r(prev), null);
                m.add("V", null, one(lin(p, me, "V", D)), null, r(prev));
            } else {
                m.add("P", null, one(lin(p, me, "P", D)), r(prev), r(me));
                m.add("Q", null, one(lin(p, me, "Q", D)), null, r(prev));
                m.add("R", null, one(lin(p, me, "R", D)), null, r(next));
                m.add("S", null, one(lin(p, me, "S", D)), r(next), r(me));
                m.add("B", null, sum(lin(p, me, "B", 2)), r(me, me), null);
            }
            return m;
        }

        public boolean hasOutput(int r, int n) {
            return true;
        }

        public boolean usesInput(int r, int n) {
            return true;
        }

        public Tensor[] reference(Params p, Tensor x, Tensor t, int n) {
            Tensor[] loss = new Tensor[n];
            if (n == 1) {
                loss[0] = torch.mse_loss(lin(p, 0, "A2", 2).apply(lin(p, 0, "A1", D).apply(x)), t);
                return loss;
            }
            for (int k = 0; k < n; k++) {
                Tensor out;
                if (k == 0) {
                    out = lin(p, 0, "A2", 2).apply(fromNext(p, x, 0, n));
                } else if (k == n - 1) {
                    out = lin(p, k, "U", 2).apply(fromPrev(p, x, k));
                } else {
                    Tensor pk = lin(p, k, "P", D).apply(fromPrev(p, x, k));
                    Tensor sk = lin(p, k, "S", D).apply(fromNext(p, x, k, n));
                    out = lin(p, k, "B", 2).apply(pk.add(sk));
                }
                loss[k] = torch.mse_loss(out, t);
            }
            return loss;
        }

        private static Tensor fromPrev(Params p, Tensor x, int k) {
            return k - 1 == 0 ? lin(p, 0, "A1", D).apply(x) : lin(p, k - 1, "R", D).apply(x);
        }

        private static Tensor fromNext(Params p, Tensor x, int k, int n) {
            return k + 1 == n - 1 ? lin(p, n - 1, "V", D).apply(x) : lin(p, k + 1, "Q", D).apply(x);
        }
    }

    /**
     * Pairs (0, 1), (2, 3), ...: the parent sends a pair of tensors to its child, which combines
     * them and sends one back (ChainerMN's tuple data test). An unpaired last rank idles; one rank
     * alone runs all three components itself.
     */
    private static final class TupleData implements Topology {
        public MultiNodeChainList build(Communicator c, Params p) {
            int n = c.size();
            int me = c.rank();
            boolean parent = me % 2 == 0;
            int partner = n == 1 ? 0 : parent ? me + 1 : me - 1;
            if (partner >= n) {
                return null;
            }
            MultiNodeChainList m = new MultiNodeChainList(c);
            if (parent) {
                Lin f0 = lin(p, me, "f0", D);
                Lin f1 = lin(p, me, "f1", D);
                m.add("subA", null, xs -> List.of(f0.apply(xs.get(0)), f1.apply(xs.get(0))), null, r(partner));
            }
            if (!parent || n == 1) {
                Lin g0 = lin(p, me, "g0", D);
                Lin g1 = lin(p, me, "g1", D);
                m.add("subB", null, xs -> List.of(g0.apply(xs.get(0)).add(g1.apply(xs.get(1)))), r(partner), r(partner));
            }
            if (parent) {
                m.add("subC", null, one(lin(p, me, "C", 2)), r(partner), null);
            }
            return m;
        }

        public boolean hasOutput(int r, int n) {
            return r % 2 == 0;
        }

        public boolean usesInput(int r, int n) {
            return r % 2 == 0;
        }

        public Tensor[] reference(Params p, Tensor x, Tensor t, int n) {
            Tensor[] loss = new Tensor[n];
            for (int k = 0; k + 1 < n || (n == 1 && k == 0); k += 2) {
                int child = n == 1 ? 0 : k + 1;
                Tensor y0 = lin(p, k, "f0", D).apply(x);
                Tensor y1 = lin(p, k, "f1", D).apply(x);
                Tensor z = lin(p, child, "g0", D).apply(y0).add(lin(p, child, "g1", D).apply(y1));
                loss[k] = torch.mse_loss(lin(p, k, "C", 2).apply(z), t);
            }
            return loss;
        }
    }

    /**
     * Rank 0 sends a hidden value (A), then, in a message of its own, integer labels made from the
     * input (L); rank 1 (rank 0 itself when alone) receives both and uses the labels as an extra
     * input (B). Neither the labels' message nor the component that makes them can carry a
     * delegate: it must reach the next floating-point value instead.
     */
    private static final class LabelsAside implements Topology {
        public MultiNodeChainList build(Communicator c, Params p) {
            int n = c.size();
            int me = c.rank();
            int user = 1 % n;
            if (me != 0 && me != user) {
                return null;
            }
            MultiNodeChainList m = new MultiNodeChainList(c);
            if (me == 0) {
                m.add("A", null, one(lin(p, 0, "A", D)), null, r(user));
                m.add("L", null, xs -> List.of(labels(xs.get(0))), null, r(user));
            }
            if (me == user) {
                Lin b = lin(p, user, "B", 2);
                m.add("B", null, xs -> List.of(withLabels(b, xs.get(0), xs.get(1))), r(0, 0), null);
            }
            return m;
        }

        private static Tensor labels(Tensor x) {
            return x.gt(new Scalar(0.0)).to(torch.ScalarType.Long);
        }

        private static Tensor withLabels(Lin b, Tensor h, Tensor labels) {
            Tensor counts = labels.to(torch.ScalarType.Double).sum(new long[] {1}, true,
                    new ScalarTypeOptional());
            return b.apply(h).add(counts.mul(new Scalar(0.1)));
        }

        public boolean hasOutput(int r, int n) {
            return r == 1 % n;
        }

        public boolean usesInput(int r, int n) {
            return r == 0;
        }

        public Tensor[] reference(Params p, Tensor x, Tensor t, int n) {
            Tensor[] loss = new Tensor[n];
            Tensor h = lin(p, 0, "A", D).apply(x);
            loss[1 % n] = torch.mse_loss(withLabels(lin(p, 1 % n, "B", 2), h, labels(x)), t);
            return loss;
        }
    }

    /**
     * Runs a topology for {@link #ITERATIONS} samples: every rank backpropagates its loss (or its
     * delegate), and its loss and the gradient of every one of its layers must equal the
     * one-process gradient of the sum of all ranks' losses.
     */
    private static void run(Communicator c, Check check, Topology topo) {
        int n = c.size();
        int me = c.rank();
        Params mine = new Params();
        MultiNodeChainList model = topo.build(c, mine);
        if (model == null) {
            check.isTrue("this rank takes no part", true, "");
            c.barrier();
            return;
        }
        Tensor xs = det(42, ITERATIONS, D);
        Tensor ts = det(43, ITERATIONS, 2);
        Worst worst = new Worst();
        String prefix = "r" + me + ".";
        // No optimizer runs: the reference's layers keep their values, only gradients are reset.
        Params ref = new Params();
        try (var noGrad = new NoGradGuard()) {
            // Creates every layer now, outside the per-iteration scopes that would free them.
            topo.reference(ref, xs.narrow(0, 0, 1), ts.narrow(0, 0, 1), n);
        }
        for (int i = 0; i < ITERATIONS; i++) {
            try (PointerScope scope = new PointerScope()) {
                Tensor x = xs.narrow(0, i, 1);
                Tensor t = ts.narrow(0, i, 1);
                mine.zeroGrad();
                ref.zeroGrad();
                List<Tensor> out = model.forwardAll(topo.usesInput(me, n) ? List.of(x) : List.of());
                Tensor loss = null;
                if (topo.hasOutput(me, n)) {
                    loss = torch.mse_loss(out.get(0), t);
                    loss.backward();
                } else {
                    out.get(0).backward();
                }
                Tensor[] losses = topo.reference(ref, x, t, n);
                Tensor total = null;
                for (Tensor l : losses) {
                    if (l != null) {
                        total = total == null ? l : total.add(l);
                    }
                }
                total.backward();
                if (loss != null) {
                    worst.diff("loss", losses[me], loss);
                }
                for (Map.Entry<String, Lin> e : mine.layers.entrySet()) {
                    if (!e.getKey().startsWith(prefix)) {
                        continue;
                    }
                    Lin refLayer = ref.layers.get(e.getKey());
                    worst.diff("grad " + e.getKey() + ".w", refLayer == null ? null : grad(refLayer.w), grad(e.getValue().w));
                    worst.diff("grad " + e.getKey() + ".b", refLayer == null ? null : grad(refLayer.b), grad(e.getValue().b));
                }
            }
        }
        worst.report(check, TOL);
        check.isTrue("this rank has layers", mine.layers.keySet().stream().anyMatch(k -> k.startsWith(prefix)),
                "no layer of this rank was checked");
        Functions.flush(c);
        c.barrier();
    }

    // ------------------------------------------------------------------------------------------
    // Optimizer

    /** A small MLP with registered float64 parameters (deterministic from a seed). */
    private static final class Mlp extends Module {
        final Tensor w1;
        final Tensor b1;
        final Tensor w2;
        final Tensor b2;
        final Tensor extra;

        Mlp(long seed) {
            w1 = new Tensor(register_parameter("w1", det(seed, 8, 5)));
            b1 = new Tensor(register_parameter("b1", det(seed + 1, 8).mul(new Scalar(0.1))));
            w2 = new Tensor(register_parameter("w2", det(seed + 2, 3, 8)));
            b2 = new Tensor(register_parameter("b2", det(seed + 3, 3).mul(new Scalar(0.1))));
            extra = new Tensor(register_parameter("extra", det(seed + 4, 3)));
        }

        Tensor forward(Tensor x) {
            return torch.linear(torch.tanh(torch.linear(x, w1, b1)), w2, b2);
        }

        List<Tensor> params() {
            return List.of(w1, b1, w2, b2, extra);
        }
    }

    private static SGD sgd(Module m, double lr, double momentum) {
        SGDOptions o = new SGDOptions(lr);
        o.momentum().put(momentum);
        return new SGD(m.parameters(), o);
    }

    /** The global batch of step s: 4 rows per rank. */
    private static Tensor[] batch(int s, int n) {
        return new Tensor[] {det(500 + s, 4L * n, 5), det(600 + s, 4L * n, 3)};
    }

    private static void checkSameOnEveryRank(Communicator c, Check check, List<Tensor> params) {
        for (int i = 0; i < params.size(); i++) {
            List<Tensor> all = c.allgather(params.get(i).detach());
            for (int k = 0; k < all.size(); k++) {
                check.tensorsClose("param " + i + " bit-identical to rank 0's (rank " + k + ")", all.get(0), all.get(k), 0);
            }
        }
    }

    /**
     * Same initial parameters everywhere, 4 rows per rank, SGD with momentum for 5 steps: the
     * parameters equal a one-process run on the concatenated batches, and are bit-identical on
     * every rank.
     */
    private static void optimizerMatchesOneProcess(Communicator c, Check check) {
        int n = c.size();
        int me = c.rank();
        Mlp model = new Mlp(11);
        MultiNodeOptimizer opt = new MultiNodeOptimizer(sgd(model, 0.1, 0.9), model, c);
        Mlp ref = new Mlp(11);
        SGD refOpt = sgd(ref, 0.1, 0.9);
        for (int s = 0; s < 5; s++) {
            Tensor[] b = batch(s, n);
            opt.zeroGrad();
            torch.mse_loss(model.forward(b[0].narrow(0, 4L * me, 4)), b[1].narrow(0, 4L * me, 4)).backward();
            opt.step();
            refOpt.zero_grad();
            torch.mse_loss(ref.forward(b[0]), b[1]).backward();
            refOpt.step();
        }
        check.isTrue("broadcast happened", opt.synced(), "not synced");
        for (int i = 0; i < 4; i++) {
            check.tensorsClose("param " + i + " = one process", ref.params().get(i), model.params().get(i), 1e-12);
        }
        checkSameOnEveryRank(c, check, model.params());
    }

    /**
     * Different initial parameters per rank: the first step broadcasts rank 0's parameters, then
     * applies the mean of the gradients each rank computed at its own initial parameters.
     */
    private static void optimizerBroadcastsFirst(Communicator c, Check check) {
        int n = c.size();
        int me = c.rank();
        Mlp model = new Mlp(20 + me);
        MultiNodeOptimizer opt = new MultiNodeOptimizer(sgd(model, 0.5, 0), model, c);
        Tensor[] b = batch(0, n);
        opt.zeroGrad();
        torch.mse_loss(model.forward(b[0].narrow(0, 4L * me, 4)), b[1].narrow(0, 4L * me, 4)).backward();
        opt.step();
        // Expected: theta0(rank 0) - lr * mean_k grad_k(theta0(rank k), rows of rank k).
        Mlp root = new Mlp(20);
        List<Tensor> expected = new ArrayList<>();
        for (Tensor p : root.params()) {
            expected.add(p.detach().clone());
        }
        for (int k = 0; k < n; k++) {
            Mlp mk = new Mlp(20 + k);
            torch.mse_loss(mk.forward(b[0].narrow(0, 4L * k, 4)), b[1].narrow(0, 4L * k, 4)).backward();
            for (int i = 0; i < 4; i++) {
                expected.set(i, expected.get(i).sub(mk.params().get(i).grad().mul(new Scalar(0.5 / n))));
            }
        }
        for (int i = 0; i < 4; i++) {
            check.tensorsClose("param " + i, expected.get(i), model.params().get(i), 1e-12);
        }
        check.tensorsClose("unused parameter = rank 0's", root.extra.detach(), model.extra, 0);
        checkSameOnEveryRank(c, check, model.params());
    }

    /** Only rank 0 uses the parameter {@code extra}: the others count as zero gradients. */
    private static void optimizerMissingGradients(Communicator c, Check check) {
        int n = c.size();
        int me = c.rank();
        Mlp model = new Mlp(30);
        MultiNodeOptimizer opt = new MultiNodeOptimizer(sgd(model, 1.0, 0), model, c);
        opt.syncParameters();
        opt.zeroGrad();
        Tensor coefficient = det(31, 3);
        Tensor loss = model.forward(det(32 + me, 2, 5)).sum();
        if (me == 0) {
            loss = loss.add(model.extra.mul(coefficient).sum());
        }
        loss.backward();
        check.isTrue("rank 0 alone has a gradient for extra", (me == 0) == model.extra.grad().defined(),
                "gradient defined: " + model.extra.grad().defined());
        opt.step();
        Tensor expected = det(34, 3).sub(coefficient.div(new Scalar((double) n)));
        check.tensorsClose("extra moved by rank 0's gradient / N", expected, model.extra, 1e-12);
        checkSameOnEveryRank(c, check, model.params());
    }

    // ------------------------------------------------------------------------------------------
    // Batch normalization

    private static final long[] BATCHES = {3, 1, 0, 2};

    /**
     * Rank r holds BATCHES[r] samples of shape (4 channels, 2); rank 2 holds none. Outputs, input
     * gradients, summed parameter gradients and running statistics must equal BatchNorm on the
     * concatenated batch in one process; evaluation mode must use the running statistics.
     */
    private static void batchNorm(Communicator c, Check check) {
        int n = c.size();
        int me = c.rank();
        long total = 0;
        long offset = 0;
        for (int k = 0; k < n; k++) {
            offset += k < me ? BATCHES[k] : 0;
            total += BATCHES[k];
        }
        Tensor all = det(700, total, 4, 2).mul(new Scalar(3.0)).add(new Scalar(1.0));
        Tensor coefficients = det(701, total, 4, 2);
        MultiNodeBatchNorm bn = new MultiNodeBatchNorm(c, 4, 1e-5, 0.1, true, torch.ScalarType.Double);
        try (var noGrad = new NoGradGuard()) {
            bn.weight().copy_(det(702, 4).add(new Scalar(1.0)));
            bn.bias().copy_(det(703, 4));
        }
        Tensor x = all.narrow(0, offset, BATCHES[me]).clone().requires_grad_(true);
        Tensor y = bn.forward(x);
        y.mul(coefficients.narrow(0, offset, BATCHES[me])).sum().backward();

        Tensor xr = all.clone().requires_grad_(true);
        Tensor w = det(702, 4).add(new Scalar(1.0)).requires_grad_(true);
        Tensor b = det(703, 4).requires_grad_(true);
        Tensor rm = torch.zeros(new long[] {4}, F64);
        Tensor rv = torch.ones(new long[] {4}, F64);
        Tensor yr = torch.batch_norm(xr, new TensorOptional(w), new TensorOptional(b), new TensorOptional(rm),
                new TensorOptional(rv), true, 0.1, 1e-5, false);
        yr.mul(coefficients).sum().backward();

        check.tensorsClose("output", yr.narrow(0, offset, BATCHES[me]), y, TOL);
        check.tensorsClose("input gradient", xr.grad().narrow(0, offset, BATCHES[me]), grad(x), TOL);
        check.tensorsClose("weight gradient (summed over ranks)", w.grad(),
                c.allreduce(grad(bn.weight()), ReduceOp.SUM), TOL);
        check.tensorsClose("bias gradient (summed over ranks)", b.grad(),
                c.allreduce(grad(bn.bias()), ReduceOp.SUM), TOL);
        check.tensorsClose("running mean", rm, bn.runningMean(), TOL);
        check.tensorsClose("running variance", rv, bn.runningVar(), TOL);

        bn.train(false);
        Tensor xe = all.narrow(0, offset, BATCHES[me]);
        Tensor ye = bn.forward(xe);
        Tensor yre = torch.batch_norm(all, new TensorOptional(w), new TensorOptional(b), new TensorOptional(rm),
                new TensorOptional(rv), false, 0.1, 1e-5, false);
        check.tensorsClose("evaluation output", yre.narrow(0, offset, BATCHES[me]), ye, TOL);
    }

    /**
     * 70000 float16 samples per rank: more than float16 can count (its largest value is 65504),
     * and sums of that many values overflow it too. The statistics must still be those of the
     * global batch, as a float64 BatchNorm computes them.
     */
    private static void batchNormHalf(Communicator c, Check check) {
        int n = c.size();
        int me = c.rank();
        long rows = 70000;
        Tensor all = det(710, n * rows, 2).mul(new Scalar(3.0)).add(new Scalar(1.0)).to(torch.ScalarType.Half);
        MultiNodeBatchNorm bn = new MultiNodeBatchNorm(c, 2, 1e-5, 0.1, true, torch.ScalarType.Half);
        Tensor y = bn.forward(all.narrow(0, me * rows, rows));
        Tensor xr = all.to(torch.ScalarType.Double);
        Tensor rm = torch.zeros(new long[] {2}, F64);
        Tensor rv = torch.ones(new long[] {2}, F64);
        Tensor yr = torch.batch_norm(xr, new TensorOptional(torch.ones(new long[] {2}, F64)),
                new TensorOptional(torch.zeros(new long[] {2}, F64)), new TensorOptional(rm),
                new TensorOptional(rv), true, 0.1, 1e-5, false);
        check.tensorsClose("output", yr.narrow(0, me * rows, rows), y.to(torch.ScalarType.Double), 1e-2);
        check.tensorsClose("running mean", rm, bn.runningMean().to(torch.ScalarType.Double), 1e-2);
        check.tensorsClose("running variance", rv, bn.runningVar().to(torch.ScalarType.Double), 1e-2);
    }
}
