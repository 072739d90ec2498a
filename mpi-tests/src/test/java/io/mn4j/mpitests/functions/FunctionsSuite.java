package io.mn4j.mpitests.functions;

import static io.mn4j.mpitests.functions.DeterministicFixtures.F64;
import static io.mn4j.mpitests.functions.DeterministicFixtures.TOL;
import static io.mn4j.mpitests.functions.DeterministicFixtures.det;
import static io.mn4j.mpitests.functions.DeterministicFixtures.grad;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.ReduceOp;
import io.mn4j.functions.Functions;
import io.mn4j.functions.Gathered;
import io.mn4j.functions.MultiNodeChainList;
import io.mn4j.functions.autograd.CustomFunction;
import io.mn4j.mpitests.Check;
import io.mn4j.mpitests.Scenario;
import io.mn4j.mpitests.ScenarioSuite;
import io.mn4j.mpitests.functions.DeterministicFixtures.Lin;
import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiPredicate;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.BoolOptional;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorArrayRefOptional;
import org.bytedeco.pytorch.global.torch;

/**
 * ChainerMN's point-to-point and collective scenarios on the differentiable functions, with
 * values checked against the same model computed in one process (every rank builds the whole
 * model from deterministic parameters), plus bad inputs.
 */
public class FunctionsSuite implements ScenarioSuite {
    private static final int D = 10;

    @Override
    public Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = new LinkedHashMap<>();
        s.put("linear pipeline", (c, check) -> pipeline(c, check, false));
        s.put("ring with delegate", (c, check) -> pipeline(c, check, true));
        s.put("list sends", FunctionsSuite::listSends);
        s.put("no-grad send and pseudoConnect", FunctionsSuite::noGradSendAndPseudoConnect);
        s.put("allgather", FunctionsSuite::allgather);
        s.put("allgather of a zero-size leaf", FunctionsSuite::allgatherZeroSize);
        s.put("alltoall", FunctionsSuite::alltoall);
        s.put("bcast", FunctionsSuite::bcast);
        s.put("gather", FunctionsSuite::gather);
        s.put("scatter", FunctionsSuite::scatter);
        s.put("allreduce", FunctionsSuite::allreduce);
        s.put("gather with mixed dtypes", FunctionsSuite::gatherMixed);
        s.put("scatter with mixed dtypes", FunctionsSuite::scatterMixed);
        s.put("alltoall with mixed dtypes", FunctionsSuite::alltoallMixed);
        s.put("allgather with mixed dtypes", FunctionsSuite::allgatherMixed);
        s.put("bcast and allreduce with mixed dtypes", FunctionsSuite::bcastAllreduceMixed);
        s.put("mixed dtypes no output can carry", FunctionsSuite::mixedWithoutCarrier);
        s.put("unused outputs tied in as delegates", FunctionsSuite::unusedOutputsAsDelegates);
        s.put("collective backward order mismatch", FunctionsSuite::orderMismatch);
        s.put("bad inputs", FunctionsSuite::badInputs);
        s.put("delegate from another communicator", FunctionsSuite::foreignDelegate);
        s.put("hooks released", FunctionsSuite::hooksReleased);
        s.put("second backward refused", FunctionsSuite::secondBackward);
        s.put("create_graph refused", FunctionsSuite::createGraphRefused);
        s.put("sendAll received with recv", FunctionsSuite::sendAllReceivedWithRecv);
        return s;
    }

    /** Rank r holds layer r (Linear(10,10) + sigmoid); the loss is the MSE against the input. */
    private static Tensor layer(Lin l, Tensor x) {
        return torch.sigmoid(torch.linear(x, l.w, l.b));
    }

    /**
     * 0 -> 1 -> ... -> N-1. Pipeline: the last rank computes the loss. Ring: the last rank sends
     * back to rank 0, which receives into its own graph through its send's delegate.
     */
    private static void pipeline(Communicator c, Check check, boolean ring) {
        int n = c.size();
        int r = c.rank();
        Tensor x0 = det(1, 4, D);
        List<Lin> ref = new ArrayList<>();
        Tensor h = x0;
        for (int i = 0; i < n; i++) {
            ref.add(new Lin(100 + i, D, D, false));
            h = layer(ref.get(i), h);
        }
        Tensor refLoss = torch.mse_loss(h, x0);
        refLoss.backward();
        Lin mine = new Lin(100 + r, D, D, false);
        int lossRank = ring ? 0 : n - 1;
        for (int it = 0; it < 3; it++) {
            mine.zeroGrad();
            Tensor loss = null;
            if (n == 1) {
                loss = torch.mse_loss(layer(mine, x0), x0);
                loss.backward();
            } else if (r == 0) {
                Tensor phi = Functions.send(layer(mine, x0), c, 1, 0);
                if (ring) {
                    Tensor z = Functions.recv(c, n - 1, 0, phi);
                    loss = torch.mse_loss(z, x0);
                    loss.backward();
                } else {
                    check.isTrue("delegate is 0-dim zero", phi.dim() == 0 && phi.item_double() == 0
                            && phi.requires_grad(), "delegate " + phi);
                    phi.backward();
                }
            } else {
                Tensor z = Functions.recv(c, r - 1, 0);
                Tensor y = layer(mine, z);
                if (r == n - 1 && !ring) {
                    loss = torch.mse_loss(y, x0);
                    loss.backward();
                } else {
                    Functions.send(y, c, (r + 1) % n, 0).backward();
                }
            }
            if (r == lossRank) {
                check.close("loss it " + it, refLoss.item_double(), loss.item_double(), TOL);
            }
            check.tensorsClose("dW it " + it, ref.get(r).w.grad(), mine.w.grad(), TOL);
            check.tensorsClose("db it " + it, ref.get(r).b.grad(), mine.b.grad(), TOL);
        }
        Functions.flush(c);
    }

    /**
     * A list [a, b, c, labels] travels 0 -> 1 -> ... -> N-1; every rank transforms a, b and c and
     * adds 1 to the labels. The last rank's loss uses a and b but not c, whose gradient must come
     * back as zero.
     */
    private static void listSends(Communicator c, Check check) {
        int n = c.size();
        int r = c.rank();
        Tensor x0 = det(2, 3, D);
        Tensor labels = torch.arange(new Scalar(3));
        // Reference: the whole chain in one process.
        List<Lin[]> ref = new ArrayList<>();
        Tensor a = null;
        Tensor b = null;
        for (int i = 0; i < n; i++) {
            Lin[] l = {new Lin(200 + 3 * i, D, D, false), new Lin(201 + 3 * i, D, D, false),
                new Lin(202 + 3 * i, D, D, false)};
            ref.add(l);
            if (i == 0) {
                a = layer(l[0], x0);
                b = layer(l[1], x0);
            } else {
                Tensor a2 = layer(l[0], a);
                b = layer(l[1], b).add(a2.mul(new Scalar(0.5)));
                a = a2;
            }
        }
        Tensor refLoss = torch.mse_loss(a, x0).add(torch.mse_loss(b, x0).mul(new Scalar(0.5)));
        refLoss.backward();
        Lin[] mine = {new Lin(200 + 3 * r, D, D, false), new Lin(201 + 3 * r, D, D, false),
            new Lin(202 + 3 * r, D, D, false)};
        List<Tensor> out;
        if (r == 0) {
            out = List.of(layer(mine[0], x0), layer(mine[1], x0), layer(mine[2], x0), labels);
        } else {
            List<Tensor> in = Functions.recvAll(c, r - 1, 3);
            check.equal("received list length", 4, in.size());
            check.tensorsClose("labels arrived", labels.add(new Scalar(r - 1)), in.get(3), 0);
            check.isTrue("labels carry no gradient", !in.get(3).requires_grad(), "labels require grad");
            Tensor a2 = layer(mine[0], in.get(0));
            out = List.of(a2, layer(mine[1], in.get(1)).add(a2.mul(new Scalar(0.5))), layer(mine[2], in.get(2)),
                    in.get(3).add(new Scalar(1)));
        }
        if (r == n - 1) {
            Tensor loss = torch.mse_loss(out.get(0), x0).add(torch.mse_loss(out.get(1), x0).mul(new Scalar(0.5)));
            loss.backward();
            check.close("loss", refLoss.item_double(), loss.item_double(), TOL);
        } else {
            Functions.sendAll(out, c, r + 1, 3).backward();
        }
        for (int k = 0; k < 3; k++) {
            check.tensorsClose("dW" + k, grad(ref.get(r)[k].w), grad(mine[k].w), TOL);
            check.tensorsClose("db" + k, grad(ref.get(r)[k].b), grad(mine[k].b), TOL);
        }
        check.isTrue("unused element c has zero gradient", grad(mine[2].w).abs().max().item_double() == 0,
                "layer c got a gradient");
        Functions.flush(c);
    }

    /**
     * ChainerMN's pseudo_connect example: rank 0 sends the input itself (no grad) and a hidden
     * value, and returns pseudoConnect(phi1, phi2); rank 1 uses both.
     */
    private static void noGradSendAndPseudoConnect(Communicator c, Check check) {
        int r = c.rank();
        Tensor x0 = det(3, 2, D);
        Lin ref0 = new Lin(300, D, D, false);
        Lin ref1 = new Lin(301, D, D, false);
        Tensor refLoss = torch.mse_loss(layer(ref1, layer(ref0, x0)).add(x0.mul(new Scalar(0.5))), x0);
        refLoss.backward();
        if (c.size() == 1) {
            check.isTrue("needs two ranks", true, "");
            return;
        }
        if (r == 0) {
            Lin mine = new Lin(300, D, D, false);
            Tensor phi1 = Functions.send(x0, c, 1, 4);
            Tensor phi2 = Functions.send(layer(mine, x0), c, 1, 5);
            Tensor psi = Functions.pseudoConnect(phi1, phi2);
            check.isTrue("psi is 0-dim zero", psi.dim() == 0 && psi.item_double() == 0, "psi " + psi);
            long received = receives(c);
            psi.backward();
            check.tensorsClose("dW rank 0", ref0.w.grad(), mine.w.grad(), TOL);
            check.tensorsClose("db rank 0", ref0.b.grad(), mine.b.grad(), TOL);
            // The input's gradient still travels back and must be taken (and dropped), or it would
            // stay queued in MPI under its tag.
            check.equal("gradients received in backward, the no-grad input's included", 2L, receives(c) - received);
        } else if (r == 1) {
            Lin mine = new Lin(301, D, D, false);
            Tensor z1 = Functions.recv(c, 0, 4);
            Tensor z2 = Functions.recv(c, 0, 5);
            check.tensorsClose("no-grad tensor arrived", x0, z1, 0);
            Tensor loss = torch.mse_loss(layer(mine, z2).add(z1.mul(new Scalar(0.5))), x0);
            loss.backward();
            check.close("loss", refLoss.item_double(), loss.item_double(), TOL);
            check.tensorsClose("dW rank 1", ref1.w.grad(), mine.w.grad(), TOL);
            check.tensorsClose("db rank 1", ref1.b.grad(), mine.b.grad(), TOL);
        } else {
            check.isTrue("idle rank", true, "");
        }
        Functions.flush(c);
    }

    /** Point-to-point receives this rank's communicator has completed. */
    private static long receives(Communicator c) {
        var recv = c.stats().snapshot().get("recv");
        return recv == null ? 0 : recv.calls();
    }

    /**
     * Outputs nobody uses, tied in as delegates with pseudoConnect: rank 1 ignores what it
     * receives, the bcast root uses its x instead of the broadcast value, rank 0 ignores its
     * allreduce. Their backward must still run (the peers wait for it), with zero gradients.
     */
    private static void unusedOutputsAsDelegates(Communicator c, Check check) {
        int n = c.size();
        int r = c.rank();
        if (n > 1 && r < 2) {
            if (r == 0) {
                Tensor x = det(9100, 3).requires_grad_(true);
                Functions.send(x, c, 1, 12).backward();
                check.tensorsClose("unused on the peer: zero gradient", torch.zeros(new long[] {3}, F64), grad(x), 0);
            } else {
                Tensor w = det(9101, 3).requires_grad_(true);
                Tensor y = Functions.recv(c, 0, 12);
                Functions.pseudoConnect(y, w.mul(new Scalar(2.0)).sum()).backward();
                check.tensorsClose("own gradient", torch.full(new long[] {3}, new Scalar(2.0), F64), w.grad(), 0);
            }
        }
        int root = n - 1;
        Tensor x = det(9200, 2, 3).requires_grad_(true);
        Tensor y = Functions.bcast(c, r == root ? x : null, root);
        if (r == root) {
            Functions.pseudoConnect(y, x.mul(coef(9300, r, 0, 2, 3)).sum()).backward();
            Tensor expected = torch.zeros(new long[] {2, 3}, F64);
            for (int k = 0; k < n; k++) {
                expected = expected.add(coef(9300, k, 0, 2, 3));
            }
            check.tensorsClose("bcast root: own use of x plus the others' gradients", expected, x.grad(), 1e-12);
        } else {
            y.mul(coef(9300, r, 0, 2, 3)).sum().backward();
        }
        Tensor a = det(9400 + r, 4).requires_grad_(true);
        Tensor s = Functions.allreduce(c, a, ReduceOp.SUM);
        if (r == 0) {
            Tensor other = det(9500, 4).requires_grad_(true);
            Functions.pseudoConnect(s, other.sum()).backward();
        } else {
            s.mul(coef(9600, r, 0, 4)).sum().backward();
        }
        Tensor expected = torch.zeros(new long[] {4}, F64);
        for (int k = 1; k < n; k++) {
            expected = expected.add(coef(9600, k, 0, 4));
        }
        check.tensorsClose("allreduce unused on rank 0: the others' gradients", expected, grad(a), 1e-12);
        Functions.flush(c);
    }

    /** Coefficient of the loss of rank k on the output block j. */
    private static Tensor coef(int base, int k, int j, long... shape) {
        return det(base + 17L * k + j, shape);
    }

    /**
     * x_r has shape (r+1, 3). Rank k's loss is sum_j <C_kj, y_j> over every block but
     * (k+1) mod N (unused, so zero gradient). Expected: dL/dx_r = sum_k [r != (k+1) mod N] C_kr.
     */
    private static void allgather(Communicator c, Check check) {
        int n = c.size();
        int r = c.rank();
        Tensor x = det(10 + r, r + 1, 3).requires_grad_(true);
        List<Tensor> ys = Functions.allgather(c, x);
        check.equal("outputs", n, ys.size());
        Tensor loss = torch.zeros(new long[0], F64);
        for (int j = 0; j < n; j++) {
            check.tensorsClose("value from " + j, det(10 + j, j + 1, 3), ys.get(j), 0);
            if (n == 1 || j != (r + 1) % n) {
                loss = loss.add(ys.get(j).mul(coef(1000, r, j, j + 1, 3)).sum());
            }
        }
        loss.backward();
        Tensor expected = torch.zeros(new long[] {r + 1, 3}, F64);
        for (int k = 0; k < n; k++) {
            if (n == 1 || r != (k + 1) % n) {
                expected = expected.add(coef(1000, k, r, r + 1, 3));
            }
        }
        check.tensorsClose("gradient = reduce-scatter (sum)", expected, x.grad(), 1e-12);
    }

    /**
     * x_r has shape (r, 3), so rank 0's has no elements; rank k's loss is sum_j <C_kj, y_j>. Every
     * rank's leaf gets its reduce-scattered gradient, rank 0's a defined one of shape (0, 3), as
     * PyTorch gives a leaf without elements.
     */
    private static void allgatherZeroSize(Communicator c, Check check) {
        int n = c.size();
        int r = c.rank();
        Tensor x = det(20 + r, r, 3).requires_grad_(true);
        List<Tensor> ys = Functions.allgather(c, x);
        Tensor loss = torch.zeros(new long[0], F64);
        for (int j = 0; j < n; j++) {
            loss = loss.add(ys.get(j).mul(coef(1500, r, j, j, 3)).sum());
        }
        loss.backward();
        Tensor expected = torch.zeros(new long[] {r, 3}, F64);
        for (int k = 0; k < n; k++) {
            expected = expected.add(coef(1500, k, r, r, 3));
        }
        check.isTrue("the leaf has a gradient", x.grad().defined(), "undefined gradient of a leaf of shape " + Arrays.toString(Tensors.shape(x)));
        if (x.grad().defined()) {
            check.tensorsClose("gradient = reduce-scatter (sum)", expected, x.grad(), 1e-12);
        }
    }

    /** x_rj (shape (j+1, 2)) goes to rank j; rank j's loss is sum_k <C_jk, y_k>; dL/dx_rj = C_jr. */
    private static void alltoall(Communicator c, Check check) {
        int n = c.size();
        int r = c.rank();
        List<Tensor> xs = new ArrayList<>();
        for (int j = 0; j < n; j++) {
            xs.add(det(2000 + 10L * r + j, j + 1, 2).requires_grad_(true));
        }
        List<Tensor> ys = Functions.alltoall(c, xs);
        Tensor loss = torch.zeros(new long[0], F64);
        for (int k = 0; k < n; k++) {
            check.tensorsClose("value from " + k, det(2000 + 10L * k + r, r + 1, 2), ys.get(k), 0);
            loss = loss.add(ys.get(k).mul(coef(3000, r, k, r + 1, 2)).sum());
        }
        loss.backward();
        for (int j = 0; j < n; j++) {
            check.tensorsClose("gradient of the part for " + j, coef(3000, j, r, j + 1, 2), xs.get(j).grad(), 1e-12);
        }
    }

    /**
     * Root N-1 broadcasts x; rank k's loss is <C_k, y>; dL/dx = sum_k C_k. Non-root ranks pass a
     * 0-dim leaf as delegate, which must get a zero gradient.
     */
    private static void bcast(Communicator c, Check check) {
        int n = c.size();
        int r = c.rank();
        int root = n - 1;
        Tensor x = det(4000, 2, 3).requires_grad_(true);
        Tensor delegate = torch.zeros(new long[0], F64).requires_grad_(true);
        Tensor y = Functions.bcast(c, r == root ? x : delegate, root);
        check.tensorsClose("value", x.detach(), y, 0);
        y.mul(coef(4100, r, 0, 2, 3)).sum().backward();
        if (r == root) {
            Tensor expected = torch.zeros(new long[] {2, 3}, F64);
            for (int k = 0; k < n; k++) {
                expected = expected.add(coef(4100, k, 0, 2, 3));
            }
            check.tensorsClose("root gradient = gather and sum", expected, x.grad(), 1e-12);
        } else {
            check.isTrue("delegate got a zero gradient", delegate.grad().defined() && delegate.grad().item_double() == 0,
                    "delegate gradient " + delegate.grad());
        }
    }

    /** Gather at root 0; the root's loss is sum_j <C_j, y_j>; others backprop their delegate. */
    private static void gather(Communicator c, Check check) {
        int n = c.size();
        int r = c.rank();
        Tensor x = det(5000 + r, r + 1, 2).requires_grad_(true);
        Gathered got = Functions.gather(c, x, 0);
        check.equal("at the root", r == 0, got.atRoot());
        if (r == 0) {
            List<Tensor> ys = got.values();
            check.equal("outputs at root", n, ys.size());
            check.throwsWith("the root has no delegate", got::delegate, "gather at root 0: the root holds the values, not a delegate");
            Tensor loss = torch.zeros(new long[0], F64);
            for (int j = 0; j < n; j++) {
                check.tensorsClose("value from " + j, det(5000 + j, j + 1, 2), ys.get(j), 0);
                loss = loss.add(ys.get(j).mul(coef(5100, 0, j, j + 1, 2)).sum());
            }
            loss.backward();
        } else {
            check.throwsWith("a non-root rank has no values", got::values, "gather at root 0: rank " + r + " holds no values, only the delegate");
            check.isTrue("non-root gets a 0-dim delegate", got.delegate().dim() == 0, "got " + got.delegate());
            got.delegate().backward();
        }
        check.tensorsClose("gradient = scatter", coef(5100, 0, r, r + 1, 2), x.grad(), 1e-12);
    }

    /** Root N/2 scatters x_j (shape (j+2, 2)); rank j's loss is <C_j, y>; dL/dx_j = C_j. */
    private static void scatter(Communicator c, Check check) {
        int n = c.size();
        int r = c.rank();
        int root = n / 2;
        List<Tensor> xs = new ArrayList<>();
        for (int j = 0; j < n; j++) {
            xs.add(det(6000 + j, j + 2, 2).requires_grad_(true));
        }
        Tensor y = Functions.scatter(c, r == root ? xs : null, root);
        check.tensorsClose("value", xs.get(r).detach(), y, 0);
        y.mul(coef(6100, r, 0, r + 2, 2)).sum().backward();
        if (r == root) {
            for (int j = 0; j < n; j++) {
                check.tensorsClose("gradient of part " + j + " = gather", coef(6100, j, 0, j + 2, 2), xs.get(j).grad(),
                        1e-12);
            }
        }
    }

    /** Sum and mean: y = sum_k x_k (or mean); rank k's loss <C_k, y>; dL/dx_r = sum_k C_k (/N). */
    private static void allreduce(Communicator c, Check check) {
        int n = c.size();
        int r = c.rank();
        for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.MEAN}) {
            Tensor x = det(7000 + r, 3, 2).requires_grad_(true);
            Tensor y = Functions.allreduce(c, x, op);
            Tensor value = torch.zeros(new long[] {3, 2}, F64);
            Tensor expected = torch.zeros(new long[] {3, 2}, F64);
            for (int k = 0; k < n; k++) {
                value = value.add(det(7000 + k, 3, 2));
                expected = expected.add(coef(7100, k, 0, 3, 2));
            }
            if (op == ReduceOp.MEAN) {
                value = value.div(new Scalar((double) n));
                expected = expected.div(new Scalar((double) n));
            }
            check.tensorsClose(op + " value", value, y, 1e-12);
            y.mul(coef(7100, r, 0, 3, 2)).sum().backward();
            check.tensorsClose(op + " gradient", expected, x.grad(), 1e-12);
        }
    }

    // Mixed dtypes: floating-point tensors on some ranks (or for some pairs), integers on others.
    // Every scenario backpropagates on every rank that has something floating point to start from
    // and checks values and gradients against the closed form; none may hang.

    /** Even ranks pass float64, odd ranks int64 (values det * 100, truncated). */
    private static boolean floating(int r) {
        return r % 2 == 0;
    }

    private static Tensor part(boolean floating, long seed, long... shape) {
        return floating ? det(seed, shape).requires_grad_(true)
                : det(seed, shape).mul(new Scalar(100.0)).to(torch.ScalarType.Long);
    }

    private static Tensor expectedValue(boolean floating, long seed, long... shape) {
        return floating ? det(seed, shape) : part(false, seed, shape);
    }

    /** Gather at root 0 (float64) and root N-1 (int64 for N = 2, 4); only float parts get gradients. */
    private static void gatherMixed(Communicator c, Check check) {
        int n = c.size();
        int r = c.rank();
        for (int root : new int[] {0, n - 1}) {
            String at = "root " + root + ": ";
            Tensor x = part(floating(r), 5200 + r, r + 1, 2);
            Gathered got = Functions.gather(c, x, root);
            if (r == root) {
                List<Tensor> ys = got.values();
                Tensor loss = torch.zeros(new long[0], F64);
                for (int j = 0; j < n; j++) {
                    check.tensorsClose(at + "value from " + j, expectedValue(floating(j), 5200 + j, j + 1, 2),
                            ys.get(j), 0);
                    if (floating(j)) {
                        loss = loss.add(ys.get(j).mul(coef(5300 + root, 0, j, j + 1, 2)).sum());
                    }
                }
                loss.backward();
            } else if (floating(r)) {
                got.delegate().backward();
            }
            if (floating(r)) {
                check.tensorsClose(at + "gradient = scatter", coef(5300 + root, 0, r, r + 1, 2), x.grad(), 1e-12);
            }
        }
        Functions.flush(c);
    }

    /** Root 0 (and root 2 with 3 or more ranks) scatters float64 parts to even ranks, int64 to odd. */
    private static void scatterMixed(Communicator c, Check check) {
        int n = c.size();
        int r = c.rank();
        for (int root = 0; root < n; root += 2) {
            String at = "root " + root + ": ";
            List<Tensor> xs = new ArrayList<>();
            for (int j = 0; j < n; j++) {
                xs.add(part(floating(j), 6200 + j, j + 2, 2));
            }
            Tensor y = Functions.scatter(c, r == root ? xs : null, root);
            check.tensorsClose(at + "value", expectedValue(floating(r), 6200 + r, r + 2, 2), y, 0);
            if (floating(r)) {
                y.mul(coef(6300 + root, r, 0, r + 2, 2)).sum().backward();
            }
            if (r == root) {
                for (int j = 0; j < n; j += 2) {
                    check.tensorsClose(at + "gradient of part " + j + " = gather", coef(6300 + root, j, 0, j + 2, 2),
                            xs.get(j).grad(), 1e-12);
                }
            }
        }
        Functions.flush(c);
    }

    /**
     * Two patterns of float64 and int64 parts x_rj (rank r to rank j): (a) float only between
     * even ranks (odd ranks send and receive integers only); (b) float from even senders (odd ranks
     * receive floats, send integers). (Float to even receivers only leaves odd ranks without a
     * floating-point output: see mixedWithoutCarrier.) Rank r's loss is
     * sum_k <C_rk, y_k> over its float y_k; dL/dx_rj = C_jr for float x_rj.
     */
    private static void alltoallMixed(Communicator c, Check check) {
        int n = c.size();
        int r = c.rank();
        String[] names = {"(a) float between even ranks", "(b) float from even senders"};
        for (int p = 0; p < names.length; p++) {
            boolean fromEvenOnly = p == 1;
            BiPredicate<Integer, Integer> fl = (from, to) ->
                    fromEvenOnly ? floating(from) : floating(from) && floating(to);
            int base = 3200 + 100 * p;
            List<Tensor> xs = new ArrayList<>();
            for (int j = 0; j < n; j++) {
                xs.add(part(fl.test(r, j), base + 10L * r + j, j + 1, 2));
            }
            List<Tensor> ys = Functions.alltoall(c, xs);
            Tensor loss = torch.zeros(new long[0], F64);
            boolean any = false;
            for (int k = 0; k < n; k++) {
                boolean f = fl.test(k, r);
                check.tensorsClose(names[p] + ": value from " + k, expectedValue(f, base + 10L * k + r, r + 1, 2),
                        ys.get(k), 0);
                if (f) {
                    loss = loss.add(ys.get(k).mul(coef(base + 50, r, k, r + 1, 2)).sum());
                    any = true;
                }
            }
            if (any) {
                loss.backward();
            }
            for (int j = 0; j < n; j++) {
                if (fl.test(r, j)) {
                    check.tensorsClose(names[p] + ": gradient of the part for " + j, coef(base + 50, j, r, j + 1, 2),
                            xs.get(j).grad(), 1e-12);
                }
            }
        }
        Functions.flush(c);
    }

    /** Even ranks float64, odd ranks int64; every rank's loss uses every float block. */
    private static void allgatherMixed(Communicator c, Check check) {
        int n = c.size();
        int r = c.rank();
        Tensor x = part(floating(r), 1200 + r, r + 1, 3);
        List<Tensor> ys = Functions.allgather(c, x);
        Tensor loss = torch.zeros(new long[0], F64);
        for (int j = 0; j < n; j++) {
            check.tensorsClose("value from " + j, expectedValue(floating(j), 1200 + j, j + 1, 3), ys.get(j), 0);
            if (floating(j)) {
                loss = loss.add(ys.get(j).mul(coef(1300, r, j, j + 1, 3)).sum());
            }
        }
        loss.backward();
        if (floating(r)) {
            Tensor expected = torch.zeros(new long[] {r + 1, 3}, F64);
            for (int k = 0; k < n; k++) {
                expected = expected.add(coef(1300, k, r, r + 1, 3));
            }
            check.tensorsClose("gradient = reduce-scatter (sum)", expected, x.grad(), 1e-12);
        }
        Functions.flush(c);
    }

    /**
     * bcast of an int64 root value: non-root ranks get it without a backward; a float delegate
     * passed with it is refused (it could not carry the delegate's backward). allreduce of float64
     * on even and int64 on odd ranks: the same error on every rank.
     */
    private static void bcastAllreduceMixed(Communicator c, Check check) {
        int n = c.size();
        int r = c.rank();
        int root = n - 1;
        Tensor xi = part(false, 4200, 2, 3);
        Tensor y = Functions.bcast(c, r == root ? xi : null, root);
        check.tensorsClose("int64 bcast value", xi, y, 0);
        if (n > 1) {
            Tensor delegate = torch.zeros(new long[0], F64).requires_grad_(true);
            if (r == root) {
                Functions.bcast(c, xi, root);
                check.isTrue("root of the refused call", true, "");
            } else {
                check.throwsWith("delegate with an int64 bcast", () -> Functions.bcast(c, delegate, root),
                        "bcast", "carries no gradient");
            }
            Tensor x = part(floating(r), 7200 + r, 3, 2);
            check.throwsWith("allreduce of float64 and int64", () -> Functions.allreduce(c, x, ReduceOp.SUM),
                    "allreduce", "dtype");
        }
        Functions.flush(c);
    }

    /**
     * A rank whose outputs of the call are all integers but whose inputs include floats: nothing
     * can start its backward, which is where its inputs' gradients arrive. It throws in forward;
     * the other ranks do not wait for it in backward. scatter: root 1 keeps an int64 part and
     * sends float64 to even ranks; alltoall: rank 1 sends float64 to every other rank and receives
     * int64 only.
     */
    private static void mixedWithoutCarrier(Communicator c, Check check) {
        int n = c.size();
        int r = c.rank();
        if (n == 1) {
            check.isTrue("needs two ranks", true, "");
            return;
        }
        List<Tensor> xs = new ArrayList<>();
        for (int j = 0; j < n; j++) {
            xs.add(part(floating(j), 6400 + j, j + 2, 2));
        }
        if (r == 1) {
            check.throwsWith("scatter root with an integer part of its own", () -> Functions.scatter(c, xs, 1),
                    "scatter", "root", "int", "floating point");
        } else {
            Tensor y = Functions.scatter(c, null, 1);
            check.tensorsClose("scatter value", expectedValue(floating(r), 6400 + r, r + 2, 2), y, 0);
            if (floating(r)) {
                y.sum().backward();
                check.isTrue("scatter backward returned", true, "");
            }
        }
        List<Tensor> parts = new ArrayList<>();
        for (int j = 0; j < n; j++) {
            parts.add(part(r == 1 && j != 1, 6500 + 10L * r + j, 2));
        }
        if (r == 1) {
            check.throwsWith("alltoall rank that sends floats and receives integers only",
                    () -> Functions.alltoall(c, parts), "alltoall", "rank 1", "int");
        } else {
            List<Tensor> ys = Functions.alltoall(c, parts);
            check.tensorsClose("alltoall value from 1", det(6500 + 10 + r, 2), ys.get(1), 0);
            ys.get(1).sum().backward();
            check.isTrue("alltoall backward returned", true, "");
        }
        Functions.flush(c);
        c.barrier();
    }

    /**
     * Two allreduces backpropagated in opposite orders on rank 0 and the others: every rank must
     * get the same clear error, and none may hang.
     */
    private static void orderMismatch(Communicator c, Check check) {
        int r = c.rank();
        Tensor a = det(8000 + r, 4).requires_grad_(true);
        Tensor b = det(8100 + r, 4).requires_grad_(true);
        Tensor y1 = Functions.allreduce(c, a, ReduceOp.SUM);
        Tensor y2 = Functions.allreduce(c, b, ReduceOp.SUM);
        if (c.size() == 1) {
            y2.sum().backward();
            y1.sum().backward();
            check.tensorsClose("one rank: gradient", torch.ones(new long[] {4}, F64), a.grad(), 0);
            return;
        }
        Tensor first = r == 0 ? y1 : y2;
        Tensor second = r == 0 ? y2 : y1;
        check.throwsWith("first backward", () -> first.sum().backward(), "different collectives", "same order");
        check.throwsWith("second backward", () -> second.sum().backward(), "different collectives");
    }

    private static void badInputs(Communicator c, Check check) {
        int n = c.size();
        int r = c.rank();
        Tensor x = det(9000, 3).requires_grad_(true);
        check.throwsWith("send to oneself", () -> Functions.send(x, c, r, 0), "must be another rank");
        check.throwsWith("recv from oneself", () -> Functions.recv(c, r, 0, null), "must be another rank");
        check.throwsWith("peer out of range", () -> Functions.send(x, c, n, 0), "outside [0, " + n + ")");
        check.throwsWith("tag out of range", () -> Functions.send(x, c, (r + 1) % n, 1 << 20), "reserved");
        check.throwsWith("allreduce MAX", () -> Functions.allreduce(c, x, ReduceOp.MAX), "only SUM and MEAN");
        check.throwsWith("pseudoConnect of integers", () -> Functions.pseudoConnect(x.sum(),
                torch.arange(new Scalar(3))), "floating point");
        check.throwsWith("null list", () -> Functions.sendAll(null, c, (r + 1) % n, 0), "null");
        check.throwsWith("chain list rank out of range", () -> new MultiNodeChainList(c)
                .add("f", null, MultiNodeChainList.Component.of(t -> t), null, new int[] {n}), "outside");
        // Wrong list lengths in collectives are reported on every rank, whoever made the mistake.
        List<Tensor> parts = new ArrayList<>();
        for (int j = 0; j < n + (r == 0 ? 1 : 0); j++) {
            parts.add(det(j, 2));
        }
        check.throwsWith("alltoall with a wrong list length", () -> Functions.alltoall(c, parts),
                "one tensor per rank");
        check.throwsWith("scatter with a wrong list length", () -> Functions.scatter(c,
                r == 0 ? List.of(det(1, 2)).subList(0, 0) : null, 0), "one tensor per rank");
        if (n >= 2) {
            // A plain send received as a list.
            if (r == 0) {
                Functions.send(det(3, 2), c, 1, 9);
            } else if (r == 1) {
                check.throwsWith("recvAll of a plain send", () -> Functions.recvAll(c, 0, 9), "sent with send()");
            }
        }
        Functions.flush(c);
        c.barrier();
    }

    /** recv with a delegate from a send on another communicator is refused before communicating. */
    private static void foreignDelegate(Communicator c, Check check) {
        int r = c.rank();
        Communicator other = c.split(0, r);
        try {
            if (c.size() == 1) {
                check.isTrue("needs two ranks", true, "");
                return;
            }
            if (r == 0) {
                Tensor phi = Functions.send(det(5, 3).requires_grad_(true), other, 1, 7);
                check.throwsWith("recv with a foreign delegate", () -> Functions.recv(c, 1, 7, phi),
                        "different communicator");
                phi.backward();
            } else if (r == 1) {
                Functions.recv(other, 0, 7).sum().backward();
                check.isTrue("peer completed", true, "");
            } else {
                check.isTrue("idle rank", true, "");
            }
            Functions.flush(other);
        } finally {
            other.barrier();
            other.close();
        }
    }

    /** After many iterations inside PointerScopes, no function's hooks are left behind. */
    private static void hooksReleased(Communicator c, Check check) {
        everyFunctionOnce(c, 0); // caches made once (per dtype, per communicator) are made here
        Functions.flush(c);
        int before = CustomFunction.liveFunctions();
        for (int it = 1; it <= 20; it++) {
            everyFunctionOnce(c, it);
        }
        Functions.flush(c);
        int after = CustomFunction.liveFunctions();
        // Graphs of earlier scenarios may die meanwhile (garbage collection), never more may live.
        // Live JavaCPP objects are not counted here: 2-7 small ones a call, among them the Java side
        // of hooks handed to LibTorch, stay registered until the garbage collector takes them.
        check.isTrue("no function of the loop is still alive", after <= before,
                after + " functions alive after the scopes closed, " + before + " before");
        check.equal("sends in flight", 0, Functions.pendingSends(c));
    }

    /** Every differentiable function, forward and backward, in a pointer scope. */
    private static void everyFunctionOnce(Communicator c, int it) {
        int n = c.size();
        int r = c.rank();
        try (PointerScope scope = new PointerScope()) {
            Tensor x = det(it, 5).requires_grad_(true);
            List<Tensor> ys = Functions.allgather(c, x);
            Tensor loss = ys.get((r + 1) % n).sum();
            loss = loss.add(Functions.bcast(c, r == 0 ? x.mul(new Scalar(3.0)) : null, 0).sum());
            List<Tensor> parts = new ArrayList<>();
            for (int j = 0; j < n; j++) {
                parts.add(x.mul(new Scalar(j + 1.0)));
            }
            for (Tensor t : Functions.alltoall(c, parts)) {
                loss = loss.add(t.sum());
            }
            loss = loss.add(Functions.scatter(c, r == 0 ? parts : null, 0).sum());
            Gathered gathered = Functions.gather(c, x, 0);
            for (Tensor t : gathered.atRoot() ? gathered.values() : List.of(gathered.delegate())) {
                loss = loss.add(t.sum());
            }
            loss = loss.add(Functions.allreduce(c, x, ReduceOp.SUM).sum());
            if (n > 1) {
                Tensor phi = Functions.send(x.mul(new Scalar(2.0)), c, (r + 1) % n, 11);
                Tensor z = Functions.recv(c, (r + n - 1) % n, 11, phi);
                Tensor psi = Functions.sendAll(List.of(x, z.mul(new Scalar(2.0))), c, (r + 1) % n, 12);
                for (Tensor t : Functions.recvAll(c, (r + n - 1) % n, 12, psi)) {
                    loss = loss.add(t.sum());
                }
            }
            loss.backward();
        }
    }

    /** The partner of this rank in pairs (0, 1), (2, 3), ...; -1 for the last rank of an odd count. */
    static int partner(Communicator c) {
        int p = c.rank() ^ 1;
        return p < c.size() ? p : -1;
    }

    /** backward() with create_graph=true (and a retained graph). */
    private static void backwardCreatingGraph(Tensor loss) {
        loss.backward(torch.ones(new long[0], F64), new BoolOptional(true), true, new TensorArrayRefOptional());
    }

    /** backward() keeping the graph. */
    private static void backwardRetaining(Tensor loss) {
        loss.backward(torch.ones(new long[0], F64), new BoolOptional(true), false, new TensorArrayRefOptional());
    }

    /**
     * One send/recv between partners with the given tag; the receiver's loss is {@code factor}
     * times the sum, so the sender's gradient must be {@code factor} everywhere: a gradient left
     * over from an earlier exchange would show.
     */
    private static void exchange(Communicator c, Check check, String name, int tag, double factor) {
        int peer = partner(c);
        if (c.rank() % 2 == 0) {
            Tensor x = det(8500 + tag, 5).requires_grad_(true);
            Functions.send(x, c, peer, tag).backward();
            check.tensorsClose(name + ": gradient", torch.full(new long[] {5}, new Scalar(factor), F64),
                    grad(x), 0);
        } else {
            Tensor z = Functions.recv(c, peer, tag);
            check.tensorsClose(name + ": value", det(8500 + tag, 5), z, 0);
            z.mul(new Scalar(factor)).sum().backward();
        }
    }

    /**
     * A second backward pass through a communication throws on the rank that runs it, before
     * communicating: a receiver with and without a delegate (new graph on the received tensor, once
     * its state is released and the garbage collector ran), a sender with a retained graph, and an
     * allreduce on every rank without a retained graph; with one, an allreduce's backward runs twice on
     * every rank. The gradients of the first passes are right, and the ranks are still
     * in step afterwards (the next exchanges on the same tags get the right gradients).
     */
    private static void secondBackward(Communicator c, Check check) {
        int n = c.size();
        int r = c.rank();
        Tensor a = det(8200 + r, 4).requires_grad_(true);
        Tensor y = Functions.allreduce(c, a, ReduceOp.SUM);
        y.sum().backward();
        check.throwsWith("allreduce: second backward after one without retain_graph", () -> y.mul(new Scalar(2.0)).sum().backward(),
                "allreduce#", "its backward already ran", "retain_graph");
        check.tensorsClose("allreduce: gradient of the first pass only", torch.full(new long[] {4}, new Scalar(n),
                F64), a.grad(), 0);
        // Every rank runs both passes of a retained graph: a collective's backward runs twice.
        Tensor b = det(8250 + r, 4).requires_grad_(true);
        Tensor yb = Functions.allreduce(c, b, ReduceOp.SUM);
        yb.sum().backward(new Tensor(), new BoolOptional(true), false,
                new TensorArrayRefOptional());
        yb.mul(new Scalar(2.0)).sum().backward();
        check.tensorsClose("allreduce: two passes of a retained graph on every rank", torch.full(new long[] {4},
                new Scalar(3.0 * n), F64), b.grad(), 0);
        int peer = partner(c);
        if (peer < 0) {
            // No one to pair with (one rank, or the last of an odd number): settled() checks it.
        } else if (r % 2 == 0) {
            Tensor x = det(8600, 3).requires_grad_(true);
            Functions.send(x, c, peer, 21).backward();
            check.tensorsClose("send: gradient of the receiver's first pass", torch.ones(new long[] {3}, F64),
                    grad(x), 0);
            Tensor x2 = det(8601, 3).requires_grad_(true);
            Functions.send(x2, c, peer, 22).backward();
            check.tensorsClose("send: gradient of the receiver with a delegate", torch.ones(new long[] {3}, F64),
                    grad(x2), 0);
            Tensor x3 = det(8602, 3).requires_grad_(true);
            Tensor phi = Functions.send(x3, c, peer, 21);
            backwardRetaining(phi);
            check.throwsWith("send: second backward of a retained graph", phi::backward,
                    "send(rank " + r + " -> " + peer + ", tag 21)", "its backward already ran", "once per forward");
            check.tensorsClose("send: gradient of the first pass only", torch.full(new long[] {3}, new Scalar(2.0),
                    F64), grad(x3), 0);
        } else {
            Tensor z = Functions.recv(c, peer, 21);
            z.sum().backward();
            check.throwsWith("recv: second backward", () -> z.mul(new Scalar(2.0)).sum().backward(),
                    "recv(rank " + r + " <- " + peer + ", tag 21)", "its backward already ran", "once per forward");
            Tensor d = torch.zeros(new long[0], F64).requires_grad_(true);
            Tensor zd = Functions.recv(c, peer, 22, d);
            zd.sum().backward();
            for (int i = 0; i < 3; i++) {
                System.gc();
            }
            check.throwsWith("recv with a delegate: second backward after the state was released",
                    () -> zd.mul(new Scalar(2.0)).sum().backward(), "tag 22)", "its backward already ran",
                    "once per forward");
            Tensor z3 = Functions.recv(c, peer, 21);
            z3.mul(new Scalar(2.0)).sum().backward();
        }
        if (peer >= 0) {
            exchange(c, check, "next exchange on tag 21", 21, 3.0);
            exchange(c, check, "next exchange on tag 22", 22, 5.0);
        }
        settled(c, check);
    }

    /** Every gradient send of this rank has completed; then the ranks meet. */
    static void settled(Communicator c, Check check) {
        Functions.flush(c);
        check.equal("sends in flight", 0, Functions.pendingSends(c));
        c.barrier();
    }

    /**
     * backward(create_graph=true) through communication throws on every rank that runs it, before
     * communicating (the cross-rank terms would be lost); ranks stay in step.
     */
    private static void createGraphRefused(Communicator c, Check check) {
        int r = c.rank();
        Tensor a = det(8300 + r, 4).requires_grad_(true);
        Tensor y = Functions.allreduce(c, a, ReduceOp.SUM);
        check.throwsWith("allreduce", () -> backwardCreatingGraph(y.mul(y).sum()), "allreduce#", "create_graph",
                "not supported");
        int peer = partner(c);
        if (peer < 0) {
            // No one to pair with (one rank, or the last of an odd number): settled() checks it.
        } else if (r % 2 == 0) {
            Tensor x = det(8700, 3).requires_grad_(true);
            Tensor phi = Functions.send(x.mul(x), c, peer, 25);
            check.throwsWith("send", () -> backwardCreatingGraph(phi), "send(rank", "create_graph", "not supported");
        } else {
            Tensor z = Functions.recv(c, peer, 25);
            check.throwsWith("recv", () -> backwardCreatingGraph(z.pow(new Scalar(2.0)).sum()), "recv(rank",
                    "create_graph", "not supported");
        }
        if (peer >= 0) {
            exchange(c, check, "next exchange on tag 25", 25, 7.0);
        }
        settled(c, check);
    }

    /**
     * A sendAll received with recv: the receiver throws, naming recvAll, after taking the whole
     * list (one element of 8 MiB, which would keep the sender's flush waiting if left queued); the
     * next message on the same tag is read correctly.
     */
    private static void sendAllReceivedWithRecv(Communicator c, Check check) {
        int r = c.rank();
        int peer = partner(c);
        if (peer < 0) {
            // No one to pair with (one rank, or the last of an odd number): settled() checks it.
        } else if (r % 2 == 0) {
            Tensor x = det(8800, 3).requires_grad_(true);
            // Its delegate is dropped: the list went to a recv, so no gradient will come back.
            Functions.sendAll(List.of(x, det(8801, 1 << 20), torch.arange(new Scalar(3))), c, peer, 23);
            Functions.flush(c);
            check.equal("sender's flush returned", 0, Functions.pendingSends(c));
        } else {
            check.throwsWith("recv of a list", () -> Functions.recv(c, peer, 23), "tag 23", "sent with sendAll()",
                    "3 tensors", "recvAll()");
        }
        if (peer >= 0) {
            exchange(c, check, "next exchange on tag 23", 23, 2.0);
        }
        settled(c, check);
    }
}
