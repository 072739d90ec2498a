package io.mn4j.examples;

import io.mn4j.communicator.CommStats;
import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.RecvHandle;
import io.mn4j.communicator.ReduceOp;
import io.mn4j.communicator.SendHandle;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/**
 * A tour of the {@link Communicator} on any number of ranks: point to point, every collective
 * (allocating and into existing tensors), a split, objects, the model helpers and the counters,
 * each result checked against what it must be. The README's example, as a program.
 *
 * <pre>
 *   scripts/mn4j-run -np 3 io.mn4j.examples.CommunicatorTour
 * </pre>
 *
 * Rank 0 prints one line per step. A result that is not what it must be throws, and the job ends
 * on every rank with that message (as any uncaught exception in {@link Communicator#run} does).
 */
public final class CommunicatorTour {
    private static final TensorOptions FLOAT = new TensorOptions(torch.ScalarType.Float);

    private CommunicatorTour() {
    }

    public static void main(String[] args) {
        Communicator.run(CommunicatorTour::tour);
    }

    static void tour(Communicator world) {
        int rank = world.rank();
        int n = world.size();
        Tour say = new Tour(rank);
        say.line("%d rank(s); this node runs %d of them", n, world.intraSize());

        // Point to point around a ring; nonblocking, so that no rank waits on another's send.
        Tensor mine = filled(new long[] {2, 3}, rank);
        int next = (rank + 1) % n;
        int prev = (rank + n - 1) % n;
        SendHandle sent = world.isend(mine, next, 7);
        RecvHandle coming = world.irecv(prev, 7);
        Tensor fromPrev = coming.waitFor(); // shape and dtype came with the data
        sent.waitFor();
        expect("ring send/recv", fromPrev, filled(new long[] {2, 3}, prev));
        say.line("ring: got a %s tensor of %s from rank %d", shape(fromPrev), fromPrev.scalar_type(), prev);

        // Reductions: every rank holds rank + 1.
        Tensor x = filled(new long[] {4}, rank + 1);
        Tensor sum = world.allreduce(x, ReduceOp.SUM);
        expect("allreduce SUM", sum, filled(new long[] {4}, n * (n + 1) / 2.0));
        Tensor max = world.allreduce(x, ReduceOp.MAX);
        expect("allreduce MAX", max, filled(new long[] {4}, n));
        Tensor inPlace = x.clone();
        world.allreduceInto(inPlace, inPlace, ReduceOp.MEAN);
        expect("allreduceInto MEAN, in place", inPlace, filled(new long[] {4}, (n + 1) / 2.0));
        say.line("allreduce of rank + 1: SUM %s, MAX %s, MEAN in place %s", first(sum), first(max), first(inPlace));

        // Broadcast from the last rank: the others pass null and learn shape and dtype from it.
        int last = n - 1;
        Tensor b = world.bcast(rank == last ? torch.arange(new Scalar(5)) : null, last);
        expect("bcast", b, torch.arange(new Scalar(5)));
        say.line("bcast from rank %d: %s of %s", last, shape(b), b.scalar_type());

        // Shapes may differ per rank: rank r contributes r + 1 elements.
        Tensor ragged = filled(new long[] {rank + 1}, rank);
        List<Tensor> all = world.allgather(ragged);
        for (int r = 0; r < n; r++) {
            expect("allgather from rank " + r, all.get(r), filled(new long[] {r + 1}, r));
        }
        List<Tensor> atRoot = world.gather(ragged, 0);
        if (rank == 0) {
            for (int r = 0; r < n; r++) {
                expect("gather from rank " + r, atRoot.get(r), filled(new long[] {r + 1}, r));
            }
        }
        say.line("allgather and gather of ragged tensors: sizes %s", sizes(all));

        // All-to-all: rank r sends j + 1 elements of value 10 r + j to rank j.
        List<Tensor> parts = new ArrayList<>();
        for (int j = 0; j < n; j++) {
            parts.add(filled(new long[] {j + 1}, 10 * rank + j));
        }
        List<Tensor> got = world.alltoall(parts);
        for (int src = 0; src < n; src++) {
            expect("alltoall from rank " + src, got.get(src), filled(new long[] {rank + 1}, 10 * src + rank));
        }
        Tensor part = world.scatter(rank == 0 ? parts : null, 0);
        expect("scatter from rank 0", part, filled(new long[] {rank + 1}, rank));
        say.line("alltoall and scatter: rank 0 received %s", sizes(got));

        // Into existing tensors: equal shapes everywhere, no allocation.
        Tensor gathered = torch.empty(new long[] {n, 4}, FLOAT, null);
        world.allgatherInto(x, gathered);
        for (int r = 0; r < n; r++) {
            expect("allgatherInto row " + r, gathered.select(0, r), filled(new long[] {4}, r + 1));
        }
        Tensor blocks = torch.arange(new Scalar(0), new Scalar(2 * n), FLOAT).add(new Scalar(100 * rank));
        Tensor exchanged = torch.empty(new long[] {2 * n}, FLOAT, null);
        world.alltoallInto(blocks, exchanged); // block j (2 elements) goes to rank j
        for (int src = 0; src < n; src++) {
            Tensor expected = torch.arange(new Scalar(2 * rank), new Scalar(2 * rank + 2), FLOAT)
                    .add(new Scalar(100 * src));
            expect("alltoallInto block from rank " + src, exchanged.narrow(0, 2 * src, 2), expected);
        }
        say.line("allgatherInto and alltoallInto: %s and %s", shape(gathered), shape(exchanged));

        // Split: even and odd ranks, each its own communicator.
        try (Communicator parity = world.split(rank % 2, rank)) {
            Tensor ranksHere = parity.allreduce(filled(new long[] {1}, rank), ReduceOp.SUM);
            double expected = 0;
            for (int r = rank % 2; r < n; r += 2) {
                expected += r;
            }
            expect("allreduce on the split communicator", ranksHere, filled(new long[] {1}, expected));
            say.line("split by parity: rank 0's group has %d rank(s), sum of their world ranks %s",
                    parity.size(), first(ranksHere));
        }

        // Java objects, and checks that end alike on every rank.
        List<String> names = world.allgatherObj("rank " + rank);
        int ranks = world.allreduceObj(1, Integer::sum);
        if (ranks != n || !names.get(n - 1).equals("rank " + (n - 1))) {
            throw new IllegalStateException("objects: " + ranks + " ranks counted, names " + names);
        }
        List<String> problems = world.problemsOnRanks(rank == n - 1 && n > 1 ? "a test problem" : null);
        String differs = world.disagreement(rank == 0 ? "the first" : "another");
        if (!problems.equals(n > 1 ? List.of("rank " + (n - 1) + ": a test problem") : List.of())
                || (differs == null) != (n == 1)) {
            throw new IllegalStateException("problemsOnRanks gave " + problems + ", disagreement " + differs);
        }
        say.line("objects: %s; problems %s; disagreement %s", names, problems, n == 1 ? "none" : differs);

        // Models: the same initial parameters everywhere, then gradients averaged.
        torch.manual_seed(rank); // a different initialisation on every rank ...
        LinearImpl model = new LinearImpl(4, 2);
        world.bcastData(model, 0); // ... until rank 0's is broadcast
        Tensor weight = model.weight();
        Tensor spread = world.allreduce(weight, ReduceOp.MAX).sub(world.allreduce(weight, ReduceOp.MIN));
        expect("parameters after bcastData", spread, torch.zeros_like(weight));
        model.forward(filled(new long[] {3, 4}, rank + 1)).sum().backward();
        Tensor ownGrad = model.weight().grad().clone();
        world.meanGrad(model);
        expect("meanGrad", model.weight().grad(), world.allreduce(ownGrad, ReduceOp.MEAN));
        say.line("model: parameters broadcast from rank 0, gradients averaged over %d rank(s)", n);

        CommStats.OpStats allreduces = world.stats().snapshot().get("allreduce");
        say.line("counters: %d allreduce call(s), %d bytes sent by them, %d bytes sent in all", allreduces.calls(),
                allreduces.bytesSent(), world.stats().totalBytesSent());
        say.line("tour done: every result as expected");
    }

    private static Tensor filled(long[] shape, double value) {
        return torch.full(shape, new Scalar(value), FLOAT);
    }

    /** Throws, naming the step, unless {@code got} has {@code expected}'s shape and values. */
    private static void expect(String step, Tensor got, Tensor expected) {
        boolean same = shape(got).equals(shape(expected)) && got.to(expected.scalar_type()).equal(expected);
        if (!same) {
            throw new IllegalStateException(step + ": got " + shape(got) + " " + values(got) + ", expected "
                    + shape(expected) + " " + values(expected));
        }
    }

    /** The first few values, for messages. */
    private static String values(Tensor t) {
        Tensor flat = t.flatten();
        List<Double> first = new ArrayList<>();
        for (long i = 0; i < Math.min(flat.numel(), 8); i++) {
            first.add(flat.get(i).item_double());
        }
        return first + (flat.numel() > 8 ? "..." : "");
    }

    private static String shape(Tensor t) {
        return Arrays.toString(t.sizes().vec().get());
    }

    private static double first(Tensor t) {
        return t.flatten().get(0).item_double();
    }

    private static List<Long> sizes(List<Tensor> ts) {
        List<Long> sizes = new ArrayList<>();
        for (Tensor t : ts) {
            sizes.add(t.numel());
        }
        return sizes;
    }

    /** Lines on rank 0 only, so that they appear once. */
    private record Tour(int rank) {
        void line(String format, Object... args) {
            if (rank == 0) {
                System.out.println(String.format(format, args));
            }
        }
    }
}
