package io.mn4j.mpitests.gnn;

import io.mn4j.gnn.dist.AggregationMode;
import io.mn4j.gnn.dist.EdgeNorm;
import io.mn4j.gnn.dist.GraphShardManager;
import io.mn4j.mpitests.Scenario;
import io.mn4j.mpitests.ScenarioSuite;
import java.util.LinkedHashMap;
import java.util.Map;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * Distributed neighbourhood sums against the one-process dense computation: forward rows and
 * input gradients, every weighting, every mode.
 */
public class GnnAggregationSuite implements ScenarioSuite {
    @Override
    public Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = new LinkedHashMap<>();
        for (AggregationMode mode : AggregationMode.values()) {
            for (boolean isolated : new boolean[] {false, true}) {
                s.put("sums " + mode + (isolated ? " with isolated nodes" : ""), (c, check) -> {
                    RandomPartitionedGraph g = new RandomPartitionedGraph(47, 160, c.size(), 5, isolated);
                    try (GraphShardManager m = GraphShardManager.build(c, g.offsets, g.localInEdges(c.rank())).mode(mode)) {
                        for (EdgeNorm norm : EdgeNorm.values()) {
                            for (torch.ScalarType type : new torch.ScalarType[] {torch.ScalarType.Double, torch.ScalarType.Float}) {
                                double tol = type == torch.ScalarType.Double ? 1e-10 : 1e-5;
                                Tensor x = RandomPartitionedGraph.values(11, type, g.n, 5);
                                Tensor r = RandomPartitionedGraph.values(12, type, g.n, 5);
                                Tensor dense = g.dense(norm).to(type);
                                Tensor outRef = dense.matmul(x);
                                Tensor gradRef = dense.t().matmul(r);
                                Tensor xLocal = g.slice(x, c.rank()).clone().set_requires_grad(true);
                                Tensor out = m.aggregate(xLocal, norm);
                                out.mul(g.slice(r, c.rank())).sum().backward();
                                String k = norm + " " + type;
                                check.tensorsClose(k + " forward", g.slice(outRef, c.rank()), out, tol);
                                check.tensorsClose(k + " grad x", g.slice(gradRef, c.rank()), xLocal.grad(), tol);
                            }
                        }
                    }
                });
            }
        }
        return s;
    }
}
