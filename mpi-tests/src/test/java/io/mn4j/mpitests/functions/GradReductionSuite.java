package io.mn4j.mpitests.functions;

import static io.mn4j.mpitests.functions.DeterministicFixtures.det;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.GradReduction;
import io.mn4j.functions.MultiNodeOptimizer;
import io.mn4j.mpitests.Check;
import io.mn4j.mpitests.Scenario;
import io.mn4j.mpitests.ScenarioSuite;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.SGD;
import org.bytedeco.pytorch.SGDOptions;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * Gradient reduction routes and dtypes ({@link GradReduction}) against one process: every rank
 * builds every rank's gradients, so it knows the exact sum and mean (float64) and what the 16-bit
 * route must give, rounding for rounding: each rank's scaled gradient (flat) or each node's float32
 * sum (hierarchical) rounded to the wire dtype, summed in float32, rounded again. On one host the
 * hierarchical route has no step between nodes, so it must round nothing.
 */
public class GradReductionSuite implements ScenarioSuite {
    /** Gradient elements: not a multiple of 2, 3 or 4 ranks, so the last block is padded. */
    private static final int[] SHAPES = {37, 5};

    @Override
    public Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = new LinkedHashMap<>();
        for (GradReduction.Route route : GradReduction.Route.values()) {
            for (ScalarType wire : new ScalarType[] {null, ScalarType.BFloat16, ScalarType.Half}) {
                GradReduction how = (route == GradReduction.Route.FLAT ? GradReduction.flat() : GradReduction.hierarchical()).in(wire);
                s.put("meanGrad " + how + " = one process", (c, check) -> reduce(c, check, how, true));
                s.put("sumGrad " + how + " = one process", (c, check) -> reduce(c, check, how, false));
            }
        }
        s.put("MultiNodeOptimizer hierarchical: 5 SGD steps = one process", GradReductionSuite::optimizerHierarchical);
        s.put("an unsupported dtype on the last rank: every rank throws", GradReductionSuite::unsupportedDtype);
        s.put("routes that differ between ranks: every rank throws", GradReductionSuite::differentRoutes);
        return s;
    }

    /** Two float32 parameters whose gradients are rank {@code r}'s deterministic values. */
    private static final class Params extends Module {
        final Tensor a;
        final Tensor b;

        Params(int r) {
            a = new Tensor(register_parameter("a", torch.zeros(SHAPES[0]).to(ScalarType.Float)));
            b = new Tensor(register_parameter("b", torch.zeros(SHAPES[1]).to(ScalarType.Float)));
            a.mutable_grad().put(gradient(r, 0));
            b.mutable_grad().put(gradient(r, 1));
        }

        static Tensor gradient(int r, int i) {
            return det(100L * r + i, SHAPES[i]).mul(new Scalar(1 + r)).to(ScalarType.Float);
        }
    }

    private static void reduce(Communicator c, Check check, GradReduction how, boolean mean) {
        Params model = new Params(c.rank());
        if (mean) {
            c.meanGrad(model, how);
        } else {
            c.sumGrad(model, how);
        }
        List<Integer> nodeOf = c.allgatherObj(c.interRank());
        double scale = mean ? 1.0 / c.size() : 1.0;
        for (int i = 0; i < 2; i++) {
            Tensor got = i == 0 ? model.a.grad() : model.b.grad();
            Tensor exact = torch.zeros(SHAPES[i]).to(ScalarType.Double);
            for (int r = 0; r < c.size(); r++) {
                exact = exact.add(Params.gradient(r, i).to(ScalarType.Double));
            }
            exact = exact.mul(new Scalar(scale));
            boolean rounds = how.dtype() != null && (how.route() == GradReduction.Route.FLAT ? c.size() : c.interSize()) > 1;
            if (!rounds) {
                check.tensorsClose("parameter " + i + ": the float64 " + (mean ? "mean" : "sum"), exact.to(ScalarType.Float), got, 1e-6);
                continue;
            }
            Tensor expected = how.route() == GradReduction.Route.FLAT
                    ? rounded(perRank(c.size(), i, r -> r), how.dtype(), scale)
                    : rounded(perNode(nodeOf, i), how.dtype(), scale);
            check.tensorsClose("parameter " + i + ": rounded as the route rounds", expected, got, 1e-6);
            check.tensorsClose("parameter " + i + ": a value of " + how.dtype(), got.to(how.dtype()).to(ScalarType.Float), got, 0);
            double eps = how.dtype() == ScalarType.BFloat16 ? 0x1p-8 : 0x1p-11;
            check.tensorsClose("parameter " + i + ": near the float64 result", exact.to(ScalarType.Float), got,
                    eps * (c.size() + 2) * 2);
        }
    }

    private interface RankToGroup {
        int group(int rank);
    }

    /** Each group's float32 sum of its ranks' gradients (group: a rank, or a node), in group order. */
    private static List<Tensor> perRank(int ranks, int i, RankToGroup groupOf) {
        List<Tensor> sums = new ArrayList<>();
        for (int r = 0; r < ranks; r++) {
            int g = groupOf.group(r);
            Tensor x = Params.gradient(r, i);
            if (g < sums.size()) {
                sums.set(g, sums.get(g).add(x));
            } else {
                sums.add(x);
            }
        }
        return sums;
    }

    private static List<Tensor> perNode(List<Integer> nodeOf, int i) {
        return perRank(nodeOf.size(), i, nodeOf::get);
    }

    /** Every group's sum scaled and rounded to {@code wire}, summed in float32, rounded again. */
    private static Tensor rounded(List<Tensor> groupSums, ScalarType wire, double scale) {
        List<Tensor> low = new ArrayList<>();
        for (Tensor t : groupSums) {
            low.add(t.mul(new Scalar(scale)).to(wire));
        }
        return torch.stack(new TensorVector(low.toArray(new Tensor[0]))).to(ScalarType.Float).sum(0).to(wire).to(ScalarType.Float);
    }

    /** Float64 parameters, hierarchical mean: the same steps as one process on the whole batch. */
    private static void optimizerHierarchical(Communicator c, Check check) {
        int n = c.size();
        int me = c.rank();
        Lin model = new Lin(11);
        MultiNodeOptimizer opt = new MultiNodeOptimizer(new SGD(model.parameters(), new SGDOptions(0.1)), model, c,
                GradReduction.hierarchical());
        Lin ref = new Lin(11);
        SGD refOpt = new SGD(ref.parameters(), new SGDOptions(0.1));
        for (int s = 0; s < 5; s++) {
            Tensor x = det(500 + s, 4L * n, 5);
            Tensor y = det(600 + s, 4L * n, 3);
            opt.zeroGrad();
            torch.mse_loss(model.forward(x.narrow(0, 4L * me, 4)), y.narrow(0, 4L * me, 4)).backward();
            opt.step();
            refOpt.zero_grad();
            torch.mse_loss(ref.forward(x), y).backward();
            refOpt.step();
        }
        check.tensorsClose("weight = one process", ref.w, model.w, 1e-12);
        check.tensorsClose("bias = one process", ref.b, model.b, 1e-12);
        List<Tensor> all = c.allgather(model.w.detach());
        for (int k = 0; k < n; k++) {
            check.tensorsClose("weight bit-identical to rank 0's (rank " + k + ")", all.get(0), all.get(k), 0);
        }
    }

    private static final class Lin extends Module {
        final Tensor w;
        final Tensor b;

        Lin(long seed) {
            w = new Tensor(register_parameter("w", det(seed, 3, 5)));
            b = new Tensor(register_parameter("b", det(seed + 1, 3)));
        }

        Tensor forward(Tensor x) {
            return torch.linear(x, w, b);
        }
    }

    private static void unsupportedDtype(Communicator c, Check check) {
        Params model = new Params(c.rank());
        boolean last = c.rank() == c.size() - 1;
        GradReduction how = GradReduction.hierarchical().in(last ? ScalarType.Long : ScalarType.BFloat16);
        check.throwsWith("meanGrad", () -> c.meanGrad(model, how), "meanGrad: every rank must pass the same gradient reduction",
                "rank " + (c.size() - 1) + ": hierarchical in Long mean of 42 gradient elements of dtype Float",
                last ? "on rank " + c.rank() + ": unsupported gradient reduction dtype Long" : "rank 0: hierarchical in BFloat16");
        check.tensorsClose("gradients untouched", Params.gradient(c.rank(), 0), model.a.grad(), 0);
    }

    private static void differentRoutes(Communicator c, Check check) {
        if (c.size() < 2) {
            check.isTrue("needs 2 ranks (skipped)", true, "");
            return;
        }
        Params model = new Params(c.rank());
        GradReduction how = c.rank() == 0 ? GradReduction.hierarchical() : GradReduction.flat();
        check.throwsWith("sumGrad", () -> c.sumGrad(model, how), "sumGrad: every rank must pass the same gradient reduction",
                "rank 0: hierarchical sum of 42", "rank 1: flat sum of 42");
    }
}
