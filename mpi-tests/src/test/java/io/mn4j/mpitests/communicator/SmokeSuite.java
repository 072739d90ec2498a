package io.mn4j.mpitests.communicator;

import io.mn4j.communicator.ReduceOp;
import io.mn4j.mpitests.Scenario;
import io.mn4j.mpitests.ScenarioSuite;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/** A few quick scenarios over the basic operations. */
public class SmokeSuite implements ScenarioSuite {
    static Tensor ramp(long n, int rank) {
        return torch.arange(new Scalar(n)).to(torch.ScalarType.Float).add(new Scalar(100.0 * rank));
    }

    @Override
    public Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = new LinkedHashMap<>();
        s.put("ring send/recv", (c, check) -> {
            int n = c.size();
            if (n == 1) {
                check.isTrue("single rank", true, "");
                return;
            }
            int next = (c.rank() + 1) % n, prev = (c.rank() + n - 1) % n;
            for (long len : new long[] {3, 5000}) {
                var h = c.isend(ramp(len, c.rank()), next, 7);
                Tensor got = c.recv(prev, 7);
                h.waitFor();
                check.tensorsClose("from prev len " + len, ramp(len, prev), got, 0);
            }
        });
        s.put("allreduce sum", (c, check) -> {
            Tensor sum = c.allreduce(ramp(10, c.rank()), ReduceOp.SUM);
            Tensor expected = torch.zeros(10);
            for (int r = 0; r < c.size(); r++) {
                expected = expected.add(ramp(10, r));
            }
            check.tensorsClose("sum", expected, sum, 0);
        });
        s.put("allgather", (c, check) -> {
            List<Tensor> all = c.allgather(ramp(c.rank() + 1, c.rank()));
            for (int r = 0; r < c.size(); r++) {
                check.tensorsClose("from " + r, ramp(r + 1, r), all.get(r), 0);
            }
        });
        s.put("alltoall", (c, check) -> {
            List<Tensor> xs = new ArrayList<>();
            for (int r = 0; r < c.size(); r++) {
                xs.add(ramp(r + 2, c.rank() * 10 + r));
            }
            List<Tensor> got = c.alltoall(xs);
            for (int r = 0; r < c.size(); r++) {
                check.tensorsClose("from " + r, ramp(c.rank() + 2, r * 10 + c.rank()), got.get(r), 0);
            }
        });
        return s;
    }
}
