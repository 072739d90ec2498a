package io.mn4j.mpitests.communicator;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.RecvHandle;
import io.mn4j.communicator.ReduceOp;
import io.mn4j.communicator.SendHandle;
import io.mn4j.examples.support.Memory;
import io.mn4j.mpitests.Check;
import io.mn4j.mpitests.LauncherMalloc;
import io.mn4j.mpitests.Scenario;
import io.mn4j.mpitests.ScenarioSuite;
import io.mn4j.mpitests.Trend;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * Every operation of the Communicator, round after round, each round in a pointer scope: nothing
 * may stay behind. After the warm-up the number of live JavaCPP objects
 * ({@link Pointer#totalCount()}) is the same after every round, and resident memory does not grow.
 */
public class MemorySuite implements ScenarioSuite {
    static final int ROUNDS = 400;
    static final int WARM_UP = 100;
    /**
     * Live JavaCPP objects may differ from the count after the warm-up by this many (another
     * thread's object of the moment); one left behind per round would add {@code ROUNDS - WARM_UP}.
     * Measured (1 to 4 ranks, twice): the same count (3) after every round.
     */
    static final long OBJECTS_SLACK = 4;
    /**
     * Resident memory may grow by this much a round: a received 512 KiB tensor left behind per
     * round would grow it by eight times as much (measured with one: 460-1030 KiB a round). Measured
     * without (1 to 4 ranks, twice, the launcher's malloc settings, under which freed memory stays
     * mapped): 1.4-15 KiB a round, the Java heap and compiled code still growing.
     */
    static final long RSS_SLOPE_LIMIT = 64L << 10;

    @Override
    public Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = new LinkedHashMap<>();
        s.put("every operation, " + ROUNDS + " rounds: nothing stays behind", MemorySuite::rounds);
        return s;
    }

    private static void rounds(Communicator c, Check check) {
        long[] objects = new long[ROUNDS];
        long[] rss = new long[ROUNDS];
        for (int k = 0; k < ROUNDS; k++) {
            try (PointerScope scope = new PointerScope()) {
                round(c, k, check);
            }
            objects[k] = Pointer.totalCount();
            rss[k] = Memory.rssBytes();
        }
        check.equal("the launch's GLIBC_TUNABLES (the memory check is calibrated with the launcher's)",
                LauncherMalloc.env().get("GLIBC_TUNABLES"), System.getenv("GLIBC_TUNABLES"));
        long settled = objects[WARM_UP];
        long most = Arrays.stream(objects, WARM_UP, ROUNDS).max().orElse(settled);
        check.isTrue("live JavaCPP objects after round " + WARM_UP + " stay as many", most <= settled + OBJECTS_SLACK,
                "after round " + WARM_UP + ": " + settled + ", then up to " + most + " (" + series(objects, "%d") + ")");
        double slope = Trend.slope(rss, WARM_UP);
        check.isTrue("resident memory stays flat after round " + WARM_UP, slope < RSS_SLOPE_LIMIT,
                String.format(Locale.ROOT, "grows by %.1f KiB a round (limit %d KiB): %s MiB", slope / 1024,
                        RSS_SLOPE_LIMIT >> 10, series(rss, "%.1f")));
    }

    /** Every 20th value, MiB for byte counts. */
    private static String series(long[] values, String format) {
        StringBuilder b = new StringBuilder();
        for (int k = 0; k < values.length; k += 20) {
            Object v = format.equals("%d") ? (Object) values[k] : (Object) (values[k] / 1048576.0);
            b.append(k).append(": ").append(String.format(Locale.ROOT, format, v)).append(k + 20 < values.length ? ", " : "");
        }
        return b.toString();
    }

    private static Tensor filled(long n, double v) {
        return torch.full(new long[] {n}, new Scalar(v));
    }

    /** One call of each operation, on small and large tensors; checks a value of each so none is skipped. */
    private static void round(Communicator c, int k, Check check) {
        int n = c.size();
        int rank = c.rank();
        int next = (rank + 1) % n;
        int prev = (rank + n - 1) % n;
        for (long len : new long[] {8, 1 << 17}) { // 32 bytes, and 512 KiB (the receive-buffer path)
            Tensor x = filled(len, rank + k);
            SendHandle sent = c.isend(x, next, 1);
            RecvHandle coming = c.irecv(prev, 1);
            Tensor got = coming.waitFor();
            sent.waitFor();
            Tensor into = torch.empty(new long[] {len});
            if (n > 1) { // a blocking receive from oneself is refused
                SendHandle again = c.isend(x, next, 2);
                c.recvInto(into, prev, 2);
                again.waitFor();
            }
            Tensor b = c.bcast(rank == 0 ? x : null, 0);
            c.bcastInto(into, n - 1);
            List<Tensor> gathered = c.gather(x, 0);
            List<Tensor> all = c.allgather(x);
            Tensor allInto = torch.empty(new long[] {n * len});
            c.allgatherInto(x, allInto);
            List<Tensor> parts = new ArrayList<>();
            for (int p = 0; p < n; p++) {
                parts.add(filled(len, 10 * rank + p)); // from this rank to rank p
            }
            List<Tensor> exchanged = c.alltoall(parts);
            Tensor blocks = filled(n * len, rank);
            Tensor exchangedInto = torch.empty(new long[] {n * len});
            c.alltoallInto(blocks, exchangedInto);
            Tensor part = c.scatter(rank == 0 ? parts : null, 0);
            Tensor sum = c.allreduce(x, ReduceOp.SUM);
            c.allreduceInto(x, into, ReduceOp.MAX);
            Tensor reduced = c.reduce(x, ReduceOp.SUM, n - 1);
            if (k % 50 == 0) { // a value of each result, now and then (reading them allocates too)
                check.close("recv", prev + k, got.get(0).item_double(), 0);
                check.close("bcast", k, b.get(0).item_double(), 0);
                check.close("allgather", n - 1 + k, all.get(n - 1).get(0).item_double(), 0);
                check.close("allgatherInto", n - 1 + k, allInto.get(n * len - 1).item_double(), 0);
                check.close("alltoall", 10 * (n - 1) + rank, exchanged.get(n - 1).get(0).item_double(), 0);
                check.close("alltoallInto", n - 1, exchangedInto.get(n * len - 1).item_double(), 0);
                check.close("scatter", rank, part.get(0).item_double(), 0);
                check.close("allreduce", n * (n - 1) / 2.0 + n * k, sum.get(0).item_double(), 0);
                check.close("allreduceInto MAX", n - 1 + k, into.get(0).item_double(), 0);
                check.equal("gather at 0", rank == 0 ? n : 0, gathered.size());
                check.equal("reduce at the last rank", rank == n - 1, reduced != null && reduced.defined());
            }
        }
        String said = "round " + k + " from " + prev;
        if (n > 1) { // blocking: rank 0 sends first, the others receive first, so none waits on a send
            if (rank == 0) {
                c.sendObj("round " + k + " from " + rank, next, 3);
                said = c.recvObj(prev, 3);
            } else {
                said = c.recvObj(prev, 3);
                c.sendObj("round " + k + " from " + rank, next, 3);
            }
        }
        int ranks = c.allreduceObj(1, Integer::sum);
        List<Integer> ranksSeen = c.allgatherObj(rank);
        String root = c.bcastObj(rank == 0 ? "zero" : null, 0);
        c.gatherObj(rank, 0);
        try (Communicator half = c.split(rank % 2, rank)) {
            half.barrier();
        }
        c.barrier();
        if (k % 50 == 0) {
            check.equal("recvObj", "round " + k + " from " + prev, said);
            check.equal("allreduceObj", n, ranks);
            check.equal("allgatherObj", n, ranksSeen.size());
            check.equal("bcastObj", "zero", root);
        }
    }
}
