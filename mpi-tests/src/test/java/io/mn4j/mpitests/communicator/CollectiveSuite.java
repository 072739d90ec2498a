package io.mn4j.mpitests.communicator;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.ReduceOp;
import io.mn4j.mpitests.Check;
import io.mn4j.mpitests.Scenario;
import io.mn4j.mpitests.ScenarioSuite;
import io.mn4j.mpitests.communicator.Data.Item;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.bytedeco.pytorch.global.torch;

/**
 * Collectives of the Communicator: bcast, bcastInto, gather, allgather, alltoall and scatter with
 * per-rank shapes, allgatherInto and alltoallInto (into contiguous outputs and views), allreduce
 * and reduce with every op, every dtype, 0-d, zero-size, non-contiguous and large tensors, with
 * every root; the same with 16-byte chunks; object collectives; and bad inputs that every rank
 * must report (no rank left waiting).
 */
public class CollectiveSuite implements ScenarioSuite {
    /** A rank-dependent shape: rank r (and, for alltoall, destination d) folded into a number. */
    @FunctionalInterface
    interface ShapeOf {
        long[] of(long v);
    }

    /**
     * Per-rank shape families for the gather-like collectives; {@code v} grows with the rank, and
     * is 0 on rank 0 for the first family, so that rank's tensor is zero-size.
     */
    record Family(String name, ShapeOf shape, boolean transposed) {
        Tensor build(ScalarType t, long v, long seed) {
            long[] s = shape.of(v);
            return transposed ? Data.wideTransposed(t, s[0], s[1], seed) : Data.wide(t, s, seed);
        }
    }

    static final List<Family> FAMILIES = List.of(
            new Family("[v, 3]", v -> new long[] {v, 3}, false),
            new Family("0-d", v -> new long[] {}, false),
            // Per rank 3-d, 4-d or 1-d: shapes that travel in a message's tag and one that needs a header.
            new Family("[v+1, 2, 1] | [v+1, 2, 1, 2] | [2v+1]", v -> switch ((int) (v % 3)) {
                case 0 -> new long[] {v + 1, 2, 1};
                case 1 -> new long[] {v + 1, 2, 1, 2};
                default -> new long[] {2 * v + 1};
            }, false),
            new Family("[v+2, 3] transposed", v -> new long[] {v + 2, 3}, true),
            new Family("[40+v, 30]", v -> new long[] {40 + v, 30}, false));

    /** Few-hundred-byte families for 16-byte chunks. */
    static final List<Family> CHUNK_FAMILIES = List.of(
            new Family("[v, 3]", v -> new long[] {v, 3}, false),
            new Family("0-d", v -> new long[] {}, false),
            new Family("[v+5, 20] transposed", v -> new long[] {v + 5, 20}, true),
            new Family("[v+7, 30]", v -> new long[] {v + 7, 30}, false));

    /**
     * Families above the threshold of the receive buffers (256 KiB of float32), so that results
     * live in the Communicator's own blocks, and alltoall parts of different sizes per destination.
     */
    static final List<Family> LARGE_FAMILIES = List.of(
            new Family("[300+v, 256]", v -> new long[] {300 + v, 256}, false),
            new Family("[256, 300+v] transposed", v -> new long[] {256, 300 + v}, true));

    static final long[][] REDUCE_SHAPES = {{}, {0, 3}, {2, 3}, {40, 30}};
    static final long[][] CHUNK_REDUCE_SHAPES = {{}, {0, 3}, {9, 11}};

    static long seed(int rank, int k) {
        return 100L * rank + k;
    }

    static String where(ScalarType t, Family f) {
        return Data.label(t) + " " + f.name();
    }

    static void bcast(Communicator c, Check check, List<Item> items, String prefix) {
        int me = c.rank();
        for (int root = 0; root < c.size(); root++) {
            for (int k = 0; k < items.size(); k++) {
                Item it = items.get(k);
                Tensor expected = it.build(seed(root, k));
                // Non-roots pass null or an unrelated tensor: both are ignored.
                Tensor mine = me == root ? it.build(seed(root, k)) : me % 2 == 0 ? null
                        : Data.wide(ScalarType.Int, new long[] {7}, me);
                Tensor got = c.bcast(mine, root);
                check.tensorsClose(prefix + "bcast " + it.name() + " from root " + root, expected, got, 0);
            }
        }
    }

    static void bcastInto(Communicator c, Check check, List<Item> items, String prefix) {
        int me = c.rank();
        for (int root = 0; root < c.size(); root++) {
            for (int k = 0; k < items.size(); k++) {
                Item it = items.get(k);
                long[] s = it.shape();
                // Targets are views on odd ranks and contiguous on even ones: only dtype and shape must agree.
                boolean view = s.length == 2 && me % 2 == 1;
                Tensor base = view ? Data.filled(it.dtype(), s[1], s[0]) : Data.filled(it.dtype(), s);
                Tensor into = view ? base.t() : base;
                if (me == root) {
                    into.copy_(it.build(seed(root, k)));
                }
                c.bcastInto(into, root);
                check.tensorsClose(prefix + "bcastInto " + it.name() + (view ? " (view)" : "") + " from root "
                        + root, it.build(seed(root, k)), into, 0);
            }
        }
    }

    static void gather(Communicator c, Check check, List<Family> families, String prefix) {
        int me = c.rank();
        int n = c.size();
        for (int root = 0; root < n; root++) {
            for (ScalarType t : Data.DTYPES) {
                for (int k = 0; k < families.size(); k++) {
                    Family f = families.get(k);
                    final int kk = k;
                    List<Tensor> got = c.gather(f.build(t, me, seed(me, k)), root);
                    String name = prefix + "gather " + where(t, f) + " at root " + root;
                    if (me == root) {
                        check.equal(name + ": count", n, got.size());
                        for (int r = 0; r < Math.min(n, got.size()); r++) {
                            check.tensorsClose(name + ": from " + r, f.build(t, r, seed(r, kk)), got.get(r), 0);
                        }
                    } else {
                        check.equal(name + ": empty off root", 0, got.size());
                    }
                }
            }
        }
    }

    static void allgather(Communicator c, Check check, List<Family> families, String prefix) {
        int me = c.rank();
        int n = c.size();
        for (ScalarType t : Data.DTYPES) {
            for (int k = 0; k < families.size(); k++) {
                Family f = families.get(k);
                List<Tensor> got = c.allgather(f.build(t, me, seed(me, k)));
                String name = prefix + "allgather " + where(t, f);
                check.equal(name + ": count", n, got.size());
                for (int r = 0; r < Math.min(n, got.size()); r++) {
                    check.tensorsClose(name + ": from " + r, f.build(t, r, seed(r, k)), got.get(r), 0);
                }
            }
        }
    }

    static void alltoall(Communicator c, Check check, List<Family> families, String prefix) {
        int me = c.rank();
        int n = c.size();
        for (ScalarType t : Data.DTYPES) {
            for (int k = 0; k < families.size(); k++) {
                Family f = families.get(k);
                List<Tensor> xs = new ArrayList<>();
                for (int d = 0; d < n; d++) {
                    xs.add(f.build(t, me + 2L * d, seed(me, 10 * d + k)));
                }
                List<Tensor> got = c.alltoall(xs);
                String name = prefix + "alltoall " + where(t, f);
                check.equal(name + ": count", n, got.size());
                for (int r = 0; r < Math.min(n, got.size()); r++) {
                    check.tensorsClose(name + ": from " + r, f.build(t, r + 2L * me, seed(r, 10 * me + k)),
                            got.get(r), 0);
                }
            }
        }
    }

    /**
     * An output of {@code n} times {@code shape}'s elements: {@code [n, ...shape]} on even ranks,
     * a strided 1-d view (staged by the Communicator) on odd ones.
     */
    static Tensor intoOut(ScalarType t, int n, long[] shape, int rank) {
        if (rank % 2 == 1) {
            return Data.filled(t, n * Data.numel(shape), 2).select(1, 0);
        }
        long[] s = new long[shape.length + 1];
        s[0] = n;
        System.arraycopy(shape, 0, s, 1, shape.length);
        return Data.filled(t, s);
    }

    static Tensor flatCat(List<Tensor> parts) {
        return torch.cat(new TensorVector(parts.stream().map(p -> p.reshape(-1)).toArray(Tensor[]::new)));
    }

    /** allgatherInto and alltoallInto: every rank passes the same dtype and shape. */
    static void intoCollectives(Communicator c, Check check, List<Item> items, String prefix) {
        int me = c.rank();
        int n = c.size();
        for (int k = 0; k < items.size(); k++) {
            Item it = items.get(k);
            final int kk = k;
            Tensor x = it.build(seed(me, k));
            Tensor gathered = intoOut(it.dtype(), n, it.shape(), me);
            c.allgatherInto(x, gathered);
            check.tensorsClose(prefix + "allgatherInto " + it.name() + (me % 2 == 1 ? " (into a view)" : ""),
                    flatCat(Data.perRank(n, r -> it.build(seed(r, kk)))), gathered.reshape(-1), 0);
            check.tensorsClose(prefix + "allgatherInto input unchanged " + it.name(), it.build(seed(me, k)), x, 0);

            // Block d of x goes to rank d; x is [n, ...shape], one item per destination.
            Tensor blocks = torch.stack(new TensorVector(Data.perRank(n, d -> it.build(seed(me, 10 * d + kk)))
                    .toArray(new Tensor[0])), 0);
            Tensor exchanged = intoOut(it.dtype(), n, it.shape(), me);
            c.alltoallInto(blocks, exchanged);
            check.tensorsClose(prefix + "alltoallInto " + it.name() + (me % 2 == 1 ? " (into a view)" : ""),
                    flatCat(Data.perRank(n, r -> it.build(seed(r, 10 * me + kk)))), exchanged.reshape(-1), 0);
        }
    }

    static void scatter(Communicator c, Check check, List<Family> families, String prefix) {
        int me = c.rank();
        int n = c.size();
        for (int root = 0; root < n; root++) {
            for (ScalarType t : Data.DTYPES) {
                for (int k = 0; k < families.size(); k++) {
                    Family f = families.get(k);
                    List<Tensor> xs = null;
                    if (me == root) {
                        xs = new ArrayList<>();
                        for (int r = 0; r < n; r++) {
                            xs.add(f.build(t, r, seed(root, 10 * r + k)));
                        }
                    } else if (me % 2 == 1) {
                        xs = List.of(Data.wide(ScalarType.Int, new long[] {3}, me)); // ignored off root
                    }
                    Tensor got = c.scatter(xs, root);
                    check.tensorsClose(prefix + "scatter " + where(t, f) + " from root " + root,
                            f.build(t, me, seed(root, 10 * me + k)), got, 0);
                }
            }
        }
    }

    static List<ReduceOp> opsFor(ScalarType t) {
        List<ReduceOp> ops = new ArrayList<>(List.of(ReduceOp.SUM, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PROD));
        if (Data.isFloat(t)) {
            ops.add(ReduceOp.MEAN);
        }
        return ops;
    }

    /** Inputs of a reduction on rank r: small values, transposed when {@code view}. */
    static Tensor reduceInput(ScalarType t, long[] shape, boolean view, int r, int k) {
        if (view) {
            return Data.small(t, new long[] {shape[1], shape[0]}, seed(r, k)).t();
        }
        return Data.small(t, shape, seed(r, k));
    }

    static void reductions(Communicator c, Check check, long[][] shapes, boolean withRoots, String prefix) {
        int me = c.rank();
        int n = c.size();
        for (ScalarType t : Data.DTYPES) {
            for (ReduceOp op : opsFor(t)) {
                // MEAN of float16/bfloat16 is rounded twice (float32 staging, then back): allow one ulp.
                double tol = op == ReduceOp.MEAN ? (t == ScalarType.BFloat16 ? 1e-2 : t == ScalarType.Half ? 1e-3 : 1e-6) : 0;
                for (int k = 0; k < shapes.length + 1; k++) {
                    boolean view = k == shapes.length;
                    long[] shape = view ? new long[] {3, 5} : shapes[k];
                    final int kk = k;
                    Tensor expected = Data.reduce(Data.perRank(n, r -> reduceInput(t, shape, view, r, kk)), op);
                    Tensor x = reduceInput(t, shape, view, me, k);
                    Tensor copy = x.clone();
                    String name = Data.describe(t, shape) + (view ? " (transposed)" : "") + " " + op;
                    check.tensorsClose(prefix + "allreduce " + name, expected, c.allreduce(x, op), tol);
                    check.tensorsClose(prefix + "allreduce input unchanged " + name, copy, x, 0);
                    allreduceInto(c, check, x, expected, op, tol, prefix + "allreduceInto " + name);
                    if (withRoots) {
                        for (int root = 0; root < n; root++) {
                            Tensor got = c.reduce(x, op, root);
                            if (me == root) {
                                check.tensorsClose(prefix + "reduce " + name + " at root " + root, expected, got, tol);
                            } else {
                                check.isTrue(prefix + "reduce " + name + " null off root " + root, got == null,
                                        "got a tensor off root");
                            }
                        }
                    }
                }
            }
        }
        // The one-argument allreduce sums.
        Tensor x = Data.small(ScalarType.Float, new long[] {4}, me);
        check.tensorsClose(prefix + "allreduce() is SUM",
                Data.reduce(Data.perRank(n, r -> Data.small(ScalarType.Float, new long[] {4}, r)), ReduceOp.SUM),
                c.allreduce(x), 0);
    }

    /**
     * allreduceInto three ways: into a separate output (a flat one on even ranks, a strided view
     * on odd ones), in place (out is x), and into a view of x's own memory that is not x.
     */
    static void allreduceInto(Communicator c, Check check, Tensor x, Tensor expected, ReduceOp op, double tol,
            String name) {
        int me = c.rank();
        ScalarType t = x.scalar_type();
        long numel = x.numel();
        Tensor copy = x.clone();
        Tensor out = me % 2 == 1 ? Data.filled(t, numel, 2).select(1, 0) : Data.filled(t, numel);
        c.allreduceInto(x, out, op);
        check.tensorsClose(name + (me % 2 == 1 ? " (into a view)" : ""), expected.reshape(-1), out.reshape(-1), tol);
        check.tensorsClose(name + " input unchanged", copy, x, 0);

        Tensor own = x.clone();
        c.allreduceInto(own, own, op);
        check.tensorsClose(name + " in place", expected, own, tol);

        // out shares x's memory one element further on: the reduction must read x before writing.
        Tensor both = Data.filled(t, numel + 1);
        both.narrow(0, 0, numel).copy_(x.reshape(-1));
        Tensor shifted = both.narrow(0, 1, numel);
        c.allreduceInto(both.narrow(0, 0, numel).view(x.sizes()), shifted, op);
        check.tensorsClose(name + " into overlapping memory", expected.reshape(-1), shifted, tol);
    }

    /** A serializable, comparable per-rank value. */
    record Entry(int rank, String name, List<Long> values) implements Serializable {
    }

    static Entry entry(int r) {
        List<Long> values = new ArrayList<>();
        for (int i = 0; i < r + 2; i++) {
            values.add(r * 1_000_000_000_000L + i);
        }
        return new Entry(r, "rank-" + r, values);
    }

    static void objects(Communicator c, Check check, String prefix) {
        int me = c.rank();
        int n = c.size();
        for (int root = 0; root < n; root++) {
            HashMap<String, List<Integer>> map = new HashMap<>();
            map.put("root", List.of(root));
            map.put("big", new ArrayList<>(Collections.nCopies(400, root)));
            HashMap<String, List<Integer>> got = c.bcastObj(me == root ? map : null, root);
            check.equal(prefix + "bcastObj from root " + root, map, got);
            List<Entry> gathered = c.gatherObj(entry(me), root);
            if (me == root) {
                check.equal(prefix + "gatherObj at root " + root, Data.perRankList(n, CollectiveSuite::entry), gathered);
            } else {
                check.equal(prefix + "gatherObj empty off root " + root, List.of(), gathered);
            }
        }
        check.equal(prefix + "allgatherObj", Data.perRankList(n, CollectiveSuite::entry), c.allgatherObj(entry(me)));
        List<String> oddRanks = new ArrayList<>();
        for (int r = 1; r < n; r += 2) {
            oddRanks.add("rank " + r + ": odd " + r);
        }
        check.equal(prefix + "problemsOnRanks lists the odd ranks' problems in rank order", oddRanks,
                c.problemsOnRanks(me % 2 == 1 ? "odd " + me : null));
        check.equal(prefix + "disagreement: none when every rank has the same value", null, c.disagreement(7L));
        String byParity = n == 1 ? null : n == 2 ? "rank 0 has even; rank 1 has odd"
                : n == 3 ? "ranks 0, 2 have even; rank 1 has odd" : "ranks 0, 2 have even; ranks 1, 3 have odd";
        check.equal(prefix + "disagreement: which ranks have which value, in order of first rank", byParity,
                c.disagreement(me % 2 == 0 ? "even" : "odd"));
        check.equal(prefix + "allgatherObj of a large string", Data.perRankList(n, r -> "x" + r + "y".repeat(2000)),
                c.allgatherObj("x" + me + "y".repeat(2000)));
        check.equal(prefix + "allreduceObj sum", n * (n + 1) / 2, (int) c.allreduceObj(me + 1, Integer::sum));
        StringBuilder order = new StringBuilder("0");
        for (int r = 1; r < n; r++) {
            order.append(",").append(r);
        }
        check.equal(prefix + "allreduceObj folds in rank order", order.toString(),
                c.allreduceObj(String.valueOf(me), (a, b) -> a + "," + b));
        TreeMap<String, Integer> merged = c.allreduceObj(new TreeMap<>(Map.of("r" + me, me)), (a, b) -> {
            TreeMap<String, Integer> m = new TreeMap<>(a);
            m.putAll(b);
            return m;
        });
        check.equal(prefix + "allreduceObj of maps", n, merged.size());
    }

    /**
     * After a bad input every rank must have thrown, and the communicator must still work: a
     * correct allreduce and alltoall right after prove that no rank is stuck and that no stray
     * header or payload is left to be matched by the next exchange.
     */
    static void stillWorks(Communicator c, Check check, String after) {
        Tensor x = Data.small(ScalarType.Long, new long[] {3}, c.rank());
        check.tensorsClose("communicator works after " + after,
                Data.reduce(Data.perRank(c.size(), r -> Data.small(ScalarType.Long, new long[] {3}, r)), ReduceOp.SUM),
                c.allreduce(x, ReduceOp.SUM), 0);
        // Values new to every call: a stale payload from an earlier call would show.
        long call = STILL_WORKS_CALLS.incrementAndGet() * 1000;
        List<Tensor> got = c.alltoall(Data.perRank(c.size(), d -> Data.wide(ScalarType.Float, LARGE_PART, call + 10L * c.rank() + d)));
        for (int r = 0; r < c.size(); r++) {
            check.tensorsClose("alltoall from rank " + r + " after " + after,
                    Data.wide(ScalarType.Float, LARGE_PART, call + 10L * r + c.rank()), got.get(r), 0);
        }
    }

    /** Calls of {@link #stillWorks} in this process; every rank makes the same calls. */
    private static final AtomicLong STILL_WORKS_CALLS = new AtomicLong();

    /** Parts larger than a header's inline payload: they travel as payload messages of their own. */
    private static final long[] LARGE_PART = {300};

    static void badInputs(Communicator c, Check check, String prefix) {
        int me = c.rank();
        int n = c.size();
        int last = n - 1;

        // alltoall with a list of the wrong length on the last rank only.
        List<Tensor> xs = new ArrayList<>();
        for (int d = 0; d < (me == last ? n + 1 : n); d++) {
            xs.add(Data.wide(ScalarType.Float, LARGE_PART, d));
        }
        check.throwsWith(prefix + "alltoall with a list of " + (n + 1) + " on rank " + last, () -> c.alltoall(xs),
                "alltoall", "rank " + last, "list of " + (n + 1), "(" + n + ")");
        stillWorks(c, check, prefix + "bad alltoall");
        check.throwsWith(prefix + "alltoall with null on rank 0", () -> c.alltoall(me == 0 ? null : fullList(n)),
                "alltoall", "rank 0", "null");
        stillWorks(c, check, prefix + "null alltoall");

        // scatter with a list of the wrong length at the root.
        int root = n / 2;
        List<Tensor> wrong = me == root ? fullList(n + 2) : null;
        check.throwsWith(prefix + "scatter with a list of " + (n + 2) + " at root " + root, () -> c.scatter(wrong, root),
                "scatter", "root rank " + root, "list of " + (n + 2), "(" + n + ")");
        stillWorks(c, check, prefix + "bad scatter");

        // A tensor that cannot be sent (null, complex64) on one rank of an exchange: the ranks
        // that expect something from it throw with it, and no rank waits.
        String cannot = "rank " + last + " passed a tensor that cannot be sent";
        Tensor complexOnLast = me == last ? Data.empty(ScalarType.ComplexFloat, 2) : Data.wide(ScalarType.Float, LARGE_PART, me);
        check.throwsWith(prefix + "allgather of complex64 on rank " + last, () -> c.allgather(complexOnLast),
                "allgather", cannot);
        stillWorks(c, check, prefix + "allgather of complex64 on one rank");
        Tensor nullOnLast = me == last ? null : Data.wide(ScalarType.Float, LARGE_PART, me);
        if (me == 0 || me == last) {
            check.throwsWith(prefix + "gather at root 0 of null on rank " + last, () -> c.gather(nullOnLast, 0),
                    "gather", cannot);
        } else {
            check.equal(prefix + "gather at root 0 of null on rank " + last + ": nothing to report off the root",
                    0, c.gather(nullOnLast, 0).size());
        }
        stillWorks(c, check, prefix + "gather of null on one rank");
        List<Tensor> withNull = new ArrayList<>(fullList(n));
        if (me == last) {
            withNull.set(0, null);
        }
        // The rank that passed it also says which tensor.
        check.throwsWith(prefix + "alltoall with a null tensor for rank 0 on rank " + last, () -> c.alltoall(withNull),
                "alltoall", cannot, me == last ? "the tensor for rank 0: a null tensor" : "");
        stillWorks(c, check, prefix + "alltoall with a null tensor");
        List<Tensor> complexAtRoot = new ArrayList<>(fullList(n));
        complexAtRoot.set(last, Data.empty(ScalarType.ComplexFloat, 3));
        check.throwsWith(prefix + "scatter of a complex64 tensor from root " + root,
                () -> c.scatter(me == root ? complexAtRoot : null, root), "scatter", "root rank " + root,
                "rank " + root + " passed a tensor that cannot be sent");
        stillWorks(c, check, prefix + "scatter of complex64");

        // allreduce and reduce with different shapes, then different dtypes, on different ranks.
        if (n > 1) {
            Tensor x = Data.small(ScalarType.Float, new long[] {me + 1, 2}, me);
            List<String> shapes = new ArrayList<>(List.of("allreduce"));
            for (int r = 0; r < n; r++) {
                shapes.add("rank " + r + ": " + Data.describe(ScalarType.Float, r + 1, 2));
            }
            check.throwsWith(prefix + "allreduce with per-rank shapes", () -> c.allreduce(x, ReduceOp.SUM),
                    shapes.toArray(new String[0]));
            stillWorks(c, check, prefix + "bad allreduce");
            shapes.set(0, "reduce");
            check.throwsWith(prefix + "reduce with per-rank shapes", () -> c.reduce(x, ReduceOp.MAX, 0),
                    shapes.toArray(new String[0]));
            stillWorks(c, check, prefix + "bad reduce");
            ScalarType t = me == last ? ScalarType.Double : ScalarType.Float;
            check.throwsWith(prefix + "allreduce with a different dtype on rank " + last,
                    () -> c.allreduce(Data.small(t, new long[] {2}, me), ReduceOp.SUM),
                    "allreduce", "rank 0: float32[2]", "rank " + last + ": float64[2]");
            stillWorks(c, check, prefix + "dtype-mismatched allreduce");
            // MEAN where only one rank passes an integer tensor: that rank must not throw alone
            // (the others would wait for it in the reduction forever).
            ScalarType u = me == last ? ScalarType.Int : ScalarType.Float;
            check.throwsWith(prefix + "allreduce MEAN with an int32 tensor on rank " + last + " only",
                    () -> c.allreduce(Data.small(u, new long[] {2}, me), ReduceOp.MEAN),
                    "allreduce", "rank 0: float32[2]", "rank " + last + ": int32[2]");
            stillWorks(c, check, prefix + "MEAN with one int rank");
            // A tensor that cannot travel on one rank (a dtype mn4j does not carry, or null):
            // that rank must not throw alone either.
            Tensor complex = me == last ? Data.empty(ScalarType.ComplexFloat, 2) : Data.small(ScalarType.Float, new long[] {2}, me);
            check.throwsWith(prefix + "allreduce of complex64 on rank " + last, () -> c.allreduce(complex, ReduceOp.SUM),
                    "allreduce", "rank 0: float32[2]", "rank " + last + ": (none)");
            stillWorks(c, check, prefix + "allreduce of complex64 on one rank");
            check.throwsWith(prefix + "allreduce of null on rank 0", () -> c.allreduce(me == 0 ? null : complex, ReduceOp.MAX),
                    "allreduce", "rank 0: (none)");
            stillWorks(c, check, prefix + "allreduce of null on one rank");
            Tensor into = Data.filled(ScalarType.Int, me == 0 ? new long[] {3} : new long[] {4});
            check.throwsWith(prefix + "bcastInto with different shapes", () -> c.bcastInto(into, 0),
                    "bcast", "rank 0: int32[3]", "rank " + last + ": int32[4]");
            stillWorks(c, check, prefix + "bad bcastInto");
            // Shapes the agreement's former hash (a polynomial of base 1000003) took for equal:
            // 1 * 1000003 + 2000000 = 2 * 1000003 + 999997, with 2000000 and 1999994 elements.
            long[] shape = me == 0 ? new long[] {1, 2_000_000} : new long[] {2, 999_997};
            check.throwsWith(prefix + "allreduce of [1, 2000000] on rank 0 and [2, 999997] elsewhere",
                    () -> c.allreduce(Data.filled(ScalarType.Float, shape), ReduceOp.SUM),
                    "allreduce", "rank 0: float32[1, 2000000]", "rank " + last + ": float32[2, 999997]");
            stillWorks(c, check, prefix + "allreduce of hash-colliding shapes");
            Tensor sparse = me == last ? Data.small(ScalarType.Float, new long[] {2}, me).to_sparse()
                    : Data.small(ScalarType.Float, new long[] {2}, me);
            check.throwsWith(prefix + "allreduce of a sparse tensor on rank " + last,
                    () -> c.allreduce(sparse, ReduceOp.SUM), "allreduce", "rank " + last + ": (none)",
                    me == last ? "only dense (strided) tensors" : "");
            stillWorks(c, check, prefix + "allreduce of a sparse tensor on one rank");
        }
        Tensor sparseOnLast = me == last ? Data.small(ScalarType.Float, new long[] {3}, me).to_sparse()
                : Data.small(ScalarType.Float, new long[] {3}, me);
        check.throwsWith(prefix + "allgather of a sparse tensor on rank " + last, () -> c.allgather(sparseOnLast),
                "allgather", "rank " + last + " passed a tensor that cannot be sent", "not dense");
        stillWorks(c, check, prefix + "allgather of a sparse tensor on one rank");

        // An object that cannot be serialized on one rank: every rank throws, none waits.
        ArrayList<Object> unserializable = new ArrayList<>(List.of(new Object()));
        ArrayList<Object> fine = new ArrayList<>(List.of("rank " + me));
        ArrayList<Object> mine = me == last ? unserializable : fine;
        String[] objectFailure = me == last ? new String[] {"cannot serialize java.util.ArrayList", "NotSerializableException"}
                : new String[] {"rank " + last + " passed a tensor that cannot be sent", "could not be serialized"};
        check.throwsWith(prefix + "allgatherObj of an unserializable object on rank " + last,
                () -> c.allgatherObj(mine), objectFailure);
        stillWorks(c, check, prefix + "allgatherObj of an unserializable object");
        if (me == 0 || me == last) {
            check.throwsWith(prefix + "gatherObj at root 0 of an unserializable object on rank " + last,
                    () -> c.gatherObj(mine, 0), objectFailure);
        } else {
            check.equal(prefix + "gatherObj at root 0 with an unserializable object on rank " + last
                    + ": nothing to report off the root", 0, c.gatherObj(mine, 0).size());
        }
        stillWorks(c, check, prefix + "gatherObj of an unserializable object");
        check.throwsWith(prefix + "bcastObj of an unserializable object from root " + last,
                () -> c.bcastObj(mine, last), me == last ? objectFailure
                        : new String[] {"bcast", "root rank " + last + " passed a tensor that cannot be sent"});
        stillWorks(c, check, prefix + "bcastObj of an unserializable object");

        // allgatherInto and alltoallInto: an out of the wrong size or dtype, inputs that differ.
        Tensor two = Data.small(ScalarType.Float, new long[] {2}, me);
        String x2 = "float32[2] into ";
        Tensor longer = Data.filled(ScalarType.Float, me == last ? 2L * n + 1 : 2L * n);
        check.throwsWith(prefix + "allgatherInto with an out too long on rank " + last,
                () -> c.allgatherInto(two, longer), "allgatherInto", "rank 0: " + x2 + "float32[" + (last == 0 ? 2 * n + 1 : 2 * n) + "]",
                "rank " + last + ": " + x2 + "float32[" + (2 * n + 1) + "]", n + " times");
        stillWorks(c, check, prefix + "allgatherInto with a wrong out");
        Tensor doubles = me == 0 ? Data.filled(ScalarType.Double, 2L * n) : Data.filled(ScalarType.Float, 2L * n);
        check.throwsWith(prefix + "allgatherInto into float64 on rank 0", () -> c.allgatherInto(two, doubles),
                "allgatherInto", "rank 0: " + x2 + "float64[" + 2 * n + "]");
        stillWorks(c, check, prefix + "allgatherInto into another dtype");
        Tensor four = Data.small(ScalarType.Float, new long[] {2L * n}, me);
        check.throwsWith(prefix + "alltoallInto into null on rank " + last,
                () -> c.alltoallInto(four, me == last ? null : Data.filled(ScalarType.Float, 2L * n)),
                "alltoallInto", "rank " + last + ": float32[" + 2 * n + "] into (none)");
        stillWorks(c, check, prefix + "alltoallInto into null");
        check.throwsWith(prefix + "allgatherInto of a null x on rank " + last,
                () -> c.allgatherInto(me == last ? null : two, Data.filled(ScalarType.Float, 2L * n)),
                "allgatherInto", "rank " + last + ": (none) into float32[" + 2 * n + "]");
        stillWorks(c, check, prefix + "allgatherInto of a null x");
        if (n > 1) {
            Tensor odd = Data.small(ScalarType.Float, new long[] {n + 1L}, me);
            check.throwsWith(prefix + "alltoallInto of " + (n + 1) + " elements", () -> c.alltoallInto(odd,
                    Data.filled(ScalarType.Float, n + 1L)), "alltoallInto", "divisible by " + n,
                    "not divisible into " + n + " blocks");
            stillWorks(c, check, prefix + "alltoallInto of an indivisible x");
            Tensor grows = Data.small(ScalarType.Float, new long[] {me == last ? 3 : 2}, me);
            Tensor fits = Data.filled(ScalarType.Float, n * (me == last ? 3L : 2L));
            check.throwsWith(prefix + "allgatherInto with a longer x on rank " + last, () -> c.allgatherInto(grows, fits),
                    "allgatherInto", "same dtype and shape", "rank 0: " + x2,
                    "rank " + last + ": float32[3] into float32[" + 3 * n + "]");
            stillWorks(c, check, prefix + "allgatherInto with per-rank shapes");
        }

        // allreduceInto: an out of the wrong size or dtype on one rank, or none.
        check.throwsWith(prefix + "allreduceInto into a longer out on rank " + last,
                () -> c.allreduceInto(two, Data.filled(ScalarType.Float, me == last ? 3 : 2), ReduceOp.SUM),
                "allreduceInto", "out must hold as many elements", "rank " + last + ": " + x2 + "float32[3]",
                me == last ? "(on rank " + last + ": out is float32[3], needs 2 elements of float32)" : "");
        stillWorks(c, check, prefix + "allreduceInto with a wrong out");
        check.throwsWith(prefix + "allreduceInto into int32 on rank 0", () -> c.allreduceInto(two,
                Data.filled(me == 0 ? ScalarType.Int : ScalarType.Float, 2), ReduceOp.MAX),
                "allreduceInto", "rank 0: " + x2 + "int32[2]");
        stillWorks(c, check, prefix + "allreduceInto into another dtype");
        check.throwsWith(prefix + "allreduceInto into null on rank " + last, () -> c.allreduceInto(two,
                me == last ? null : Data.filled(ScalarType.Float, 2), ReduceOp.SUM),
                "allreduceInto", "rank " + last + ": " + x2 + "(none)");
        stillWorks(c, check, prefix + "allreduceInto into null");

        // MEAN of integer tensors.
        for (ScalarType t : new ScalarType[] {ScalarType.Int, ScalarType.Long, ScalarType.Bool, ScalarType.Byte}) {
            Tensor x = Data.small(t, new long[] {2, 3}, me);
            check.throwsWith(prefix + "allreduce MEAN of " + Data.label(t), () -> c.allreduce(x, ReduceOp.MEAN),
                    "allreduce", "MEAN", Data.describe(t, 2, 3));
            check.throwsWith(prefix + "reduce MEAN of " + Data.label(t), () -> c.reduce(x, ReduceOp.MEAN, 0),
                    "reduce", "MEAN", Data.describe(t, 2, 3));
        }
        stillWorks(c, check, prefix + "MEAN of ints");

        // Roots outside [0, size).
        Tensor y = Data.small(ScalarType.Float, new long[] {2}, me);
        for (int bad : new int[] {n, -1}) {
            String range = "[0, " + n + ")";
            String r = "root rank " + bad;
            check.throwsWith(prefix + "bcast root " + bad, () -> c.bcast(y, bad), "bcast", r, range);
            check.throwsWith(prefix + "bcastInto root " + bad, () -> c.bcastInto(y, bad), "bcast", r, range);
            check.throwsWith(prefix + "gather root " + bad, () -> c.gather(y, bad), "gather", r, range);
            check.throwsWith(prefix + "scatter root " + bad, () -> c.scatter(List.of(y), bad), "scatter", r, range);
            check.throwsWith(prefix + "reduce root " + bad, () -> c.reduce(y, ReduceOp.SUM, bad), "reduce", r, range);
        }
        // A null tensor at the bcast root: every rank hears of it.
        check.throwsWith(prefix + "bcast of null at the root", () -> c.bcast(null, 0), "bcast", "root rank 0", "null");
        check.throwsWith(prefix + "bcast of complex64 at root " + last,
                () -> c.bcast(me == last ? Data.empty(ScalarType.ComplexFloat, 2) : null, last), "bcast",
                "root rank " + last, "cannot be sent", me == last ? "cannot be communicated" : "");
        stillWorks(c, check, prefix + "bad roots");
    }

    /**
     * allgatherInto and alltoallInto with blocks of a megabyte, far above Open MPI's eager limit:
     * a peer's message longer than the receiving rank expects must be received into memory of its
     * own. (Received into the output, cut short, Open MPI 4.1's single-copy transfer writes past the
     * receive buffer: seen as a corrupted C heap.) Each output is a view with guard values after it,
     * which must survive; a correct call afterwards must get every value right.
     */
    static void largeMismatches(Communicator c, Check check) {
        int me = c.rank();
        int n = c.size();
        int last = n - 1;
        long mib = 1L << 18; // float32 elements in a megabyte
        check.throwsWith("allgatherInto, out too short on rank " + last + " (1 MiB blocks)", () ->
                c.allgatherInto(Data.small(ScalarType.Float, new long[] {mib}, me), guarded(me == last ? 5 : n * mib, check,
                        "allgatherInto, out too short")), "allgatherInto", "rank " + last + ": float32[" + mib + "] into float32[5]");
        largeIntoWorks(c, check, "an allgatherInto out too short");
        if (n == 1) {
            return; // the other cases need a rank that differs from another
        }
        long mine = (me == last ? 2 : 1) * n * mib;
        check.throwsWith("alltoallInto, x twice as long on rank " + last + " (1 MiB blocks)", () ->
                c.alltoallInto(Data.small(ScalarType.Float, new long[] {mine}, me), guarded(mine, check,
                        "alltoallInto, x twice as long")), "alltoallInto", "same dtype and shape",
                "rank " + last + ": float32[" + 2 * n * mib + "]");
        largeIntoWorks(c, check, "an alltoallInto x twice as long");
        long gathered = (me == 0 ? 2 : 1) * mib;
        check.throwsWith("allgatherInto, x twice as long on rank 0 (1 MiB blocks)", () ->
                c.allgatherInto(Data.small(ScalarType.Float, new long[] {gathered}, me), guarded(n * gathered, check,
                        "allgatherInto, x twice as long")), "allgatherInto", "rank 0: float32[" + 2 * mib + "]");
        largeIntoWorks(c, check, "an allgatherInto x twice as long");
    }

    /**
     * A float32 output of {@code elements}, followed in memory by guard values that are checked
     * once the call has returned or thrown (registered to run at the next {@link #largeIntoWorks}).
     */
    private static Tensor guarded(long elements, Check check, String what) {
        Tensor memory = Data.filled(ScalarType.Float, elements + 4096);
        GUARDS.add(() -> check.isTrue(what + ": memory after the output untouched",
                memory.narrow(0, elements, 4096).eq(new Scalar(3.0)).all().item_bool(), "an MPI transfer wrote past the output"));
        return memory.narrow(0, 0, elements);
    }

    private static final List<Runnable> GUARDS = new ArrayList<>();

    /** Checks the guards, then a correct allgatherInto and alltoallInto of megabyte blocks. */
    private static void largeIntoWorks(Communicator c, Check check, String after) {
        GUARDS.forEach(Runnable::run);
        GUARDS.clear();
        int n = c.size();
        long mib = 1L << 18;
        long call = STILL_WORKS_CALLS.incrementAndGet() * 1000;
        Tensor out = Data.filled(ScalarType.Float, n * mib);
        c.allgatherInto(Data.wide(ScalarType.Float, new long[] {mib}, call + c.rank()), out);
        Tensor blocks = Data.filled(ScalarType.Float, n * mib);
        c.alltoallInto(torch.cat(new TensorVector(Data.perRank(n, d -> Data.wide(ScalarType.Float, new long[] {mib},
                call + 10L * c.rank() + d)).toArray(new Tensor[0]))), blocks);
        for (int r = 0; r < n; r++) {
            check.tensorsClose("allgatherInto from rank " + r + " after " + after,
                    Data.wide(ScalarType.Float, new long[] {mib}, call + r), out.narrow(0, r * mib, mib), 0);
            check.tensorsClose("alltoallInto from rank " + r + " after " + after,
                    Data.wide(ScalarType.Float, new long[] {mib}, call + 10L * r + c.rank()), blocks.narrow(0, r * mib, mib), 0);
        }
    }

    /**
     * The collectives whose data follows a header (or travels in one message), on tensors of a few
     * chunks: bcast, gather, allgather, alltoall, scatter and the object collectives.
     */
    static void headedCollectives(Communicator c, Check check, List<Item> items, String prefix) {
        bcast(c, check, items, prefix);
        gather(c, check, CHUNK_FAMILIES, prefix);
        allgather(c, check, CHUNK_FAMILIES, prefix);
        alltoall(c, check, CHUNK_FAMILIES, prefix);
        scatter(c, check, CHUNK_FAMILIES, prefix);
        objects(c, check, prefix);
    }

    /**
     * Even ranks chunk at 64 bytes, odd ranks at 128, with tensors of a few KiB. The collectives
     * whose data follows a header (bcast, gather, allgather, alltoall, scatter, objects) split as
     * the sender did and deliver; the ones that move chunks in lockstep (bcastInto, the reductions,
     * allgatherInto and alltoallInto of blocks over 64 bytes) throw on every rank, naming every
     * rank's chunk size, and the next collective works.
     */
    static void perRankChunks(Communicator c, Check check, List<Item> items) {
        int me = c.rank();
        int n = c.size();
        c.setChunkBytes(me % 2 == 0 ? 64 : 128);
        c.barrier();
        try {
            String p = "per-rank chunks ";
            headedCollectives(c, check, items, p);
            // Blocks of at most the smaller chunk are never split: they need no agreement on it.
            for (long elements : new long[] {12, 16}) {
                Tensor x = Data.wide(ScalarType.Float, new long[] {elements}, me);
                Tensor out = Data.filled(ScalarType.Float, n, elements);
                c.allgatherInto(x, out);
                check.tensorsClose(p + "allgatherInto of " + 4 * elements + "-byte blocks",
                        flatCat(Data.perRank(n, r -> Data.wide(ScalarType.Float, new long[] {elements}, r))),
                        out.reshape(-1), 0);
                Tensor blocks = Data.wide(ScalarType.Float, new long[] {n, elements}, 10L * me);
                Tensor exchanged = Data.filled(ScalarType.Float, n, elements);
                c.alltoallInto(blocks, exchanged);
                check.tensorsClose(p + "alltoallInto of " + 4 * elements + "-byte blocks",
                        flatCat(Data.perRank(n, r -> Data.wide(ScalarType.Float, new long[] {n, elements}, 10L * r)
                                .select(0, me))), exchanged.reshape(-1), 0);
            }
            long[] shape = {9, 40}; // 1440 bytes of float32: 12 or 23 chunks
            Tensor x = Data.small(ScalarType.Float, shape, me);
            Tensor sum = Data.reduce(Data.perRank(n, r -> Data.small(ScalarType.Float, shape, r)), ReduceOp.SUM);
            Map<String, Runnable> lockstep = new LinkedHashMap<>();
            lockstep.put("bcastInto", () -> {
                Tensor into = me == 0 ? x.clone() : Data.filled(ScalarType.Float, shape);
                c.bcastInto(into, 0);
                check.tensorsClose(p + "bcastInto", Data.small(ScalarType.Float, shape, 0), into, 0);
            });
            lockstep.put("allreduce", () -> check.tensorsClose(p + "allreduce", sum, c.allreduce(x, ReduceOp.SUM), 0));
            lockstep.put("reduce", () -> {
                Tensor got = c.reduce(x, ReduceOp.SUM, n - 1);
                if (me == n - 1) {
                    check.tensorsClose(p + "reduce", sum, got, 0);
                }
            });
            lockstep.put("allreduceInto", () -> {
                Tensor out = Data.filled(ScalarType.Float, shape);
                c.allreduceInto(x, out, ReduceOp.SUM);
                check.tensorsClose(p + "allreduceInto", sum, out, 0);
            });
            lockstep.put("allgatherInto", () -> {
                Tensor out = Data.filled(ScalarType.Float, n * 9, 40);
                c.allgatherInto(x, out);
                check.tensorsClose(p + "allgatherInto", flatCat(Data.perRank(n, r -> Data.small(ScalarType.Float,
                        shape, r))), out.reshape(-1), 0);
            });
            lockstep.put("alltoallInto", () -> {
                Tensor blocks = Data.small(ScalarType.Float, new long[] {n, 360}, me);
                Tensor out = Data.filled(ScalarType.Float, n, 360);
                c.alltoallInto(blocks, out);
                check.tensorsClose(p + "alltoallInto", flatCat(Data.perRank(n, r -> Data.small(ScalarType.Float,
                        new long[] {n, 360}, r).select(0, me))), out.reshape(-1), 0);
            });
            for (Map.Entry<String, Runnable> op : lockstep.entrySet()) {
                if (n == 1) {
                    op.getValue().run(); // one chunk size: nothing to disagree on
                } else {
                    check.throwsWith(p + op.getKey() + " refused on every rank", op.getValue(), op.getKey().replace("bcastInto", "bcast"),
                            "chunk size", "rank 0: 64", "rank 1: 128");
                }
                // The next collective, with the chunk sizes still different, finds nothing left over.
                allgather(c, check, CHUNK_FAMILIES.subList(3, 4), p + "after " + op.getKey() + ": ");
            }
        } finally {
            c.barrier();
            c.setChunkBytes(Communicator.DEFAULT_CHUNK_BYTES);
        }
        stillWorks(c, check, "per-rank chunk sizes");
    }

    /**
     * Ops and roots that differ between ranks, or are bad on some ranks only: every rank throws,
     * naming the operation, each rank's op or root and this rank's own problem, and the ranks
     * stay in step (before, the odd rank out threw alone, or the results differed silently, or the
     * others waited in MPI forever).
     */
    static void mismatchedOpsAndRoots(Communicator c, Check check) {
        int me = c.rank();
        int n = c.size();
        int last = n - 1;
        Tensor ints = Data.small(ScalarType.Int, new long[] {4}, me);
        Tensor floats = Data.small(ScalarType.Float, new long[] {4}, me);
        Runnable inStep = () -> check.equal("ranks in step afterwards", n, c.allreduceObj(1, Integer::sum));
        // On every rank alike: a null op.
        check.throwsWith("allreduce with a null op on every rank", () -> c.allreduce(floats, null),
                "allreduce", "a null op");
        inStep.run();
        check.throwsWith("reduce with a null op on every rank", () -> c.reduce(floats, null, 0), "reduce", "a null op");
        inStep.run();
        if (n == 1) {
            return; // the rest needs ranks that differ
        }
        String[] opsDiffer = {"allreduce", "the op must be the same on every rank", "rank 0: MEAN", "rank 1: SUM"};
        check.throwsWith("allreduce MEAN of int32 on rank 0, SUM elsewhere", () -> c.allreduce(ints,
                me == 0 ? ReduceOp.MEAN : ReduceOp.SUM), me == 0 ? append(opsDiffer,
                "(on rank 0: MEAN needs a floating-point tensor, got int32[4])") : opsDiffer);
        inStep.run();
        check.throwsWith("allreduce SUM of float32 on rank 0, MAX elsewhere", () -> c.allreduce(floats,
                me == 0 ? ReduceOp.SUM : ReduceOp.MAX), "allreduce", "the op must be the same", "rank 0: SUM",
                "rank " + last + ": MAX", "the tensors: rank 0: float32[4]");
        inStep.run();
        check.throwsWith("allreduceInto MIN on rank " + last + ", PROD elsewhere", () -> c.allreduceInto(floats,
                Data.filled(ScalarType.Float, 4), me == last ? ReduceOp.MIN : ReduceOp.PROD), "allreduceInto",
                "the op must be the same", "rank 0: PROD", "rank " + last + ": MIN");
        inStep.run();
        check.throwsWith("allreduce with a null op on rank " + last + " only", () -> c.allreduce(floats,
                me == last ? null : ReduceOp.SUM), "allreduce", "rank 0: SUM", "rank " + last + ": null");
        inStep.run();
        check.throwsWith("reduce MAX at root " + n + " on rank " + last + ", 0 elsewhere", () -> c.reduce(floats,
                ReduceOp.MAX, me == last ? n : 0), "reduce", "the root must be the same on every rank", "rank 0: 0",
                "rank " + last + ": " + n, me == last ? "root rank " + n + " is outside [0, " + n + ")" : "");
        inStep.run();
        check.throwsWith("reduce at root 0 on rank 0, root " + last + " elsewhere", () -> c.reduce(floats,
                ReduceOp.SUM, me == 0 ? 0 : last), "reduce", "the root must be the same", "rank 0: 0",
                "rank " + last + ": " + last);
        inStep.run();
        // The rooted collectives without a reduction: a root outside the ranks on the last rank
        // only, and (bcast) two ranks that both take themselves for the root.
        Map<String, Runnable> rooted = new LinkedHashMap<>();
        int bad = me == last ? n : 0;
        rooted.put("bcast", () -> c.bcast(floats, bad));
        rooted.put("bcastInto", () -> c.bcastInto(Data.filled(ScalarType.Float, 4), bad));
        rooted.put("gather", () -> c.gather(floats, bad));
        rooted.put("scatter", () -> c.scatter(me == 0 ? Data.perRank(n, r -> floats) : null, bad));
        for (Map.Entry<String, Runnable> op : rooted.entrySet()) {
            String name = op.getKey().replace("bcastInto", "bcast");
            check.throwsWith(op.getKey() + " at root " + n + " on rank " + last + ", 0 elsewhere", op.getValue(),
                    name, "the root must be the same on every rank", "rank 0: 0", "rank " + last + ": " + n,
                    me == last ? "(on rank " + last + ": root rank " + n + " is outside [0, " + n + "))" : "");
            inStep.run();
        }
        check.throwsWith("bcast from root 0 on rank 0, from root " + last + " elsewhere", () -> c.bcast(floats,
                me == 0 ? 0 : last), "bcast", "the root must be the same", "rank 0: 0", "rank " + last + ": " + last);
        inStep.run();
        check.throwsWith("gather at root -1 on rank 0, at root 0 elsewhere", () -> c.gather(floats, me == 0 ? -1 : 0),
                "gather", "the root must be the same", "rank 0: -1", "rank " + last + ": 0");
        inStep.run();
        stillWorks(c, check, "mismatched ops and roots");
    }

    private static String[] append(String[] fragments, String more) {
        String[] all = Arrays.copyOf(fragments, fragments.length + 1);
        all[fragments.length] = more;
        return all;
    }

    /**
     * bcastInto where the root's {@code into} is a non-contiguous leaf that requires grad: the
     * root only reads it (a copy back would throw on the root alone), the others receive it.
     */
    static void bcastIntoReadOnlyAtRoot(Communicator c, Check check) {
        int me = c.rank();
        int n = c.size();
        for (int root = 0; root < n; root++) {
            Tensor data = Data.small(ScalarType.Float, new long[] {3, 2}, 10L + root);
            Tensor into = me == root ? data.t().detach().requires_grad_(true) : Data.filled(ScalarType.Float, 2, 3);
            try {
                c.bcastInto(into, root);
                check.tensorsClose("bcastInto from a non-contiguous leaf requiring grad at root " + root,
                        data.t(), into.detach(), 0);
            } catch (RuntimeException e) {
                check.isTrue("bcastInto from a non-contiguous leaf requiring grad at root " + root, false,
                        "threw on rank " + me + ": " + e.getMessage());
            }
            check.equal("ranks in step afterwards", n, c.allreduceObj(1, Integer::sum));
        }
    }

    static List<Tensor> fullList(int count) {
        List<Tensor> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            out.add(Data.wide(ScalarType.Float, LARGE_PART, i));
        }
        return out;
    }

    @Override
    public Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = new LinkedHashMap<>();
        List<Item> items = Data.items(P2pSuite.SHAPES, P2pSuite.TRANSPOSED);
        List<Item> chunkItems = Data.items(P2pSuite.CHUNK_SHAPES, P2pSuite.CHUNK_TRANSPOSED);
        s.put("bcast of every dtype and shape from every root", (c, check) -> bcast(c, check, items, ""));
        s.put("bcastInto of every dtype and shape from every root", (c, check) -> bcastInto(c, check, items, ""));
        s.put("gather with per-rank shapes at every root", (c, check) -> gather(c, check, FAMILIES, ""));
        s.put("allgather with per-rank shapes", (c, check) -> allgather(c, check, FAMILIES, ""));
        s.put("alltoall with per-sender-and-receiver shapes", (c, check) -> alltoall(c, check, FAMILIES, ""));
        s.put("scatter with per-rank shapes from every root", (c, check) -> scatter(c, check, FAMILIES, ""));
        s.put("allreduce and reduce: every op, dtype and root", (c, check) ->
                reductions(c, check, REDUCE_SHAPES, true, ""));
        s.put("allgatherInto and alltoallInto of every dtype and shape", (c, check) ->
                intoCollectives(c, check, items, ""));
        s.put("allgatherInto and alltoallInto: mismatched megabyte blocks", CollectiveSuite::largeMismatches);
        s.put("alltoall and allgather with shapes that change between calls", ChangingShapesScenario::run);
        s.put("object collectives", (c, check) -> objects(c, check, ""));
        s.put("bad inputs are reported on every rank", (c, check) -> badInputs(c, check, ""));
        s.put("large tensors, three rounds (received memory is reused)", (c, check) -> {
            int me = c.rank();
            int n = c.size();
            for (int round = 0; round < 3; round++) {
                String p = "large, round " + round + ": ";
                // Hundreds of large temporaries per call: free them now, not when the GC runs.
                try (PointerScope scope = new PointerScope()) {
                    gather(c, check, LARGE_FAMILIES, p);
                    allgather(c, check, LARGE_FAMILIES, p);
                }
                try (PointerScope scope = new PointerScope()) {
                    alltoall(c, check, LARGE_FAMILIES, p);
                    scatter(c, check, LARGE_FAMILIES, p);
                }
                for (ReduceOp op : List.of(ReduceOp.SUM, ReduceOp.MAX)) {
                    try (PointerScope scope = new PointerScope()) {
                        int k = round;
                        Tensor x = Data.small(ScalarType.Float, new long[] {300, 256}, seed(me, k));
                        Tensor expected = Data.reduce(Data.perRank(n, r -> Data.small(ScalarType.Float,
                                new long[] {300, 256}, seed(r, k))), op);
                        check.tensorsClose(p + "allreduce float32[300, 256] " + op, expected, c.allreduce(x, op), 0);
                    }
                }
            }
        });
        s.put("chunked (16-byte chunks): every collective again", (c, check) -> {
            c.setChunkBytes(16);
            c.barrier();
            try {
                String p = "chunked ";
                headedCollectives(c, check, chunkItems, p);
                bcastInto(c, check, chunkItems, p);
                intoCollectives(c, check, chunkItems, p);
                reductions(c, check, CHUNK_REDUCE_SHAPES, true, p);
                badInputs(c, check, p);
            } finally {
                c.barrier();
                c.setChunkBytes(Communicator.DEFAULT_CHUNK_BYTES);
            }
            check.equal("default chunk size restored", Communicator.DEFAULT_CHUNK_BYTES, c.chunkBytes());
        });
        s.put("per-rank chunk sizes (64 or 128 bytes): correct data or an error on every rank",
                (c, check) -> perRankChunks(c, check, chunkItems));
        s.put("ops and roots that differ between ranks are reported on every rank", CollectiveSuite::mismatchedOpsAndRoots);
        s.put("bcastInto only reads the root's tensor", CollectiveSuite::bcastIntoReadOnlyAtRoot);
        return s;
    }
}
