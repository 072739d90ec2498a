package io.mn4j.mpitests.iterators;

import io.mn4j.iterators.Batch;
import io.mn4j.iterators.BatchIterator;
import io.mn4j.iterators.Dataset;
import io.mn4j.iterators.DatasetException;
import io.mn4j.iterators.Datasets;
import io.mn4j.iterators.FashionMnist;
import io.mn4j.iterators.Metrics;
import io.mn4j.iterators.MultiNodeEvaluator;
import io.mn4j.iterators.MultiNodeIterator;
import io.mn4j.iterators.SerialIterator;
import io.mn4j.iterators.SubDataset;
import io.mn4j.iterators.SynchronizedIterator;
import io.mn4j.iterators.TensorDataset;
import io.mn4j.mpitests.Check;
import io.mn4j.mpitests.Scenario;
import io.mn4j.mpitests.ScenarioSuite;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * Data distribution over 1-4 ranks: exact partitions of scatterDataset / scatterIndices, batch
 * contents and epoch state of the multi-node and synchronized iterators, the evaluator's weighting,
 * and bad inputs that must fail on every rank.
 */
public class IteratorsSuite implements ScenarioSuite {
    static final int N = 10;

    /** Example i: x = [3i, 3i+1, 3i+2] + offset (float64), y = i (uint8), id = i (int64). */
    static TensorDataset ramp(int n, double offset) {
        Tensor x = torch.arange(new Scalar(3L * n)).reshape(n, 3).to(torch.ScalarType.Double).add(new Scalar(offset));
        Tensor y = torch.arange(new Scalar(n)).to(torch.ScalarType.Byte);
        Tensor id = torch.arange(new Scalar(n)).to(torch.ScalarType.Long);
        return new TensorDataset(x, y, id);
    }

    /** {@link #ramp} seen through size() and get() only: batches are stacked item by item. */
    static class ItemDataset implements Dataset<List<Tensor>> {
        final TensorDataset base;

        ItemDataset(int n) {
            base = ramp(n, 0);
        }

        @Override
        public long size() {
            return base.size();
        }

        @Override
        public List<Tensor> get(long index) {
            return base.get(index);
        }
    }

    static long[] ids(Tensor idField) {
        long[] out = new long[(int) idField.numel()];
        for (int i = 0; i < out.length; i++) {
            out[i] = idField.get(i).item_long();
        }
        return out;
    }

    /** ChainerMN's bounds, written out independently of the library. */
    static long[] expectedBounds(long n, int size, int rank, boolean equal) {
        long b = n * rank / size;
        long e = equal ? b + (n + size - 1) / size : n * (rank + 1) / size;
        return new long[] {b, e};
    }

    static long[] range(long b, long e) {
        long[] out = new long[(int) (e - b)];
        for (int i = 0; i < out.length; i++) {
            out[i] = b + i;
        }
        return out;
    }

    static void checkPart(Check check, String name, TensorDataset part, long[] expectedIds, double offset) {
        check.equal(name + " size", (long) expectedIds.length, part.size());
        check.equal(name + " ids", Arrays.toString(expectedIds), Arrays.toString(ids(part.field(2))));
        TensorDataset full = ramp(N, offset);
        Batch want = full.batch(expectedIds);
        for (int f = 0; f < 3; f++) {
            check.tensorsClose(name + " field " + f, want.field(f), part.field(f), 0);
        }
    }

    @Override
    public Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = new LinkedHashMap<>();
        s.put("scatterDataset equal length windows", (c, check) -> {
            TensorDataset part = Datasets.scatterDataset(c.rank() == 0 ? ramp(N, 0) : null, c, 0, false, 0, true);
            long[] be = expectedBounds(N, c.size(), c.rank(), true);
            checkPart(check, "part", part, range(be[0], be[1]), 0);
            if (c.size() == 4) {
                long[][] chainer = {{0, 3}, {2, 5}, {5, 8}, {7, 10}};
                check.equal("ChainerMN's windows", Arrays.toString(chainer[c.rank()]), Arrays.toString(be));
            }
        });
        s.put("scatterDataset disjoint cover from the last rank", (c, check) -> {
            int root = c.size() - 1;
            TensorDataset part = Datasets.scatterDataset(c.rank() == root ? ramp(N, 0) : null, c, root, false, 0, false);
            long[] be = expectedBounds(N, c.size(), c.rank(), false);
            checkPart(check, "part", part, range(be[0], be[1]), 0);
            List<Tensor> all = c.allgather(part.field(2));
            check.tensorsClose("concatenation is the data set", ramp(N, 0).field(2),
                    torch.cat(new TensorVector(all.toArray(new Tensor[0]))), 0);
        });
        s.put("scatterDataset shuffled", (c, check) -> {
            TensorDataset part = Datasets.scatterDataset(c.rank() == 0 ? ramp(N, 0) : null, c, 0, true, 1234, false);
            long[] order = Datasets.shuffledOrder(N, 1234);
            long[] be = expectedBounds(N, c.size(), c.rank(), false);
            checkPart(check, "part", part, Arrays.copyOfRange(order, (int) be[0], (int) be[1]), 0);
            long[] sorted = Arrays.copyOf(order, N);
            Arrays.sort(sorted);
            check.equal("order is a permutation", Arrays.toString(range(0, N)), Arrays.toString(sorted));
        });
        s.put("scatterDataset of an empty data set", (c, check) -> {
            TensorDataset part = Datasets.scatterDataset(
                    c.rank() == 0 ? Datasets.createEmptyDataset(ramp(N, 0)) : null, c, 0, false, 0, true);
            check.equal("size", expectedBounds(N, c.size(), c.rank(), true)[1]
                    - expectedBounds(N, c.size(), c.rank(), true)[0], part.size());
            check.equal("no fields", 0, part.numFields());
        });
        s.put("scatterDataset of a collated data set with fewer examples than ranks", (c, check) -> {
            // no batch override: parts are stacked from get(), and an empty part has no item to stack
            Dataset<List<Tensor>> collated = new ItemDataset(2);
            TensorDataset part = Datasets.scatterDataset(c.rank() == 0 ? collated : null, c, 0, false, 0, false);
            long[] be = expectedBounds(2, c.size(), c.rank(), false);
            check.equal("fields, also of an empty part", 3, part.numFields());
            checkPart(check, "part", part, range(be[0], be[1]), 0);
        });
        s.put("scatterIndices", (c, check) -> {
            // every rank reads its own copy; rank r's copy is shifted by 1000 r to prove which copy is used
            SubDataset<List<Tensor>> part = Datasets.scatterIndices(ramp(N, 1000.0 * c.rank()), c, 0, true, 99, true);
            long[] order = Datasets.shuffledOrder(N, 99);
            long[] be = expectedBounds(N, c.size(), c.rank(), true);
            long[] want = Arrays.copyOfRange(order, (int) be[0], (int) be[1]);
            check.equal("indices", Arrays.toString(want), Arrays.toString(part.indices()));
            Batch b = part.batch(range(0, part.size()));
            check.tensorsClose("own copy", ramp(N, 1000.0 * c.rank()).batch(want).field(0), b.field(0), 0);
            long[] mine = Datasets.scatterIndex(N, c, false);
            check.equal("scatterIndex", Arrays.toString(expectedBounds(N, c.size(), c.rank(), false)),
                    Arrays.toString(mine));
        });
        s.put("MultiNodeIterator broadcasts batches and epoch state", (c, check) -> {
            for (int master : new int[] {0, c.size() - 1}) {
                MultiNodeIterator it = MultiNodeIterator.over(c.rank() == master ? ramp(N, 0) : null, 4, true, true, 5,
                        c, master);
                SerialIterator local = new SerialIterator(ramp(N, 0), 4, true, true, 5);
                check.equal("batch size", 4, it.batchSize());
                check.equal("dataset size", (long) N, it.datasetSize());
                for (int k = 0; k < 6; k++) {
                    Batch got = it.next();
                    Batch want = local.next();
                    for (int f = 0; f < 3; f++) {
                        check.tensorsClose("master " + master + " batch " + k + " field " + f, want.field(f),
                                got.field(f), 0);
                    }
                    check.equal("epoch " + k, local.epoch(), it.epoch());
                    check.equal("new epoch " + k, local.isNewEpoch(), it.isNewEpoch());
                    check.close("epoch detail " + k, local.epochDetail(), it.epochDetail(), 1e-15);
                    check.close("previous epoch detail " + k, local.previousEpochDetail(),
                            it.previousEpochDetail(), 1e-15);
                    check.equal("iteration " + k, local.iteration(), it.iteration());
                }
                it.reset();
                check.equal("reset", 0L, it.iteration());
                check.tensorsClose("after reset", new SerialIterator(ramp(N, 0), 4, true, true, 5).next().field(2),
                        it.next().field(2), 0);
            }
        });
        s.put("MultiNodeIterator without repeat ends on every rank", (c, check) -> {
            MultiNodeIterator it = MultiNodeIterator.over(c.rank() == 0 ? ramp(N, 0) : null, 4, false, false, 0, c, 0);
            List<Long> sizes = new ArrayList<>();
            while (it.hasNext()) {
                sizes.add(it.next().size());
            }
            check.equal("batch sizes", List.of(4L, 4L, 2L), sizes);
            check.equal("epoch", 1L, it.epoch());
            check.throwsWith("next after the end", () -> it.next(), "finished");
            // the master knows it has ended; the others must not be waiting
            c.barrier();
            check.isTrue("no hang", true, "");
        });
        s.put("MultiNodeIterator: a failing master fails every rank", (c, check) -> {
            Dataset<List<Tensor>> failing = new ItemDataset(N) {
                @Override
                public Batch batch(long[] indices) {
                    if (indices[0] >= 4) {
                        throw new DatasetException("disk on fire at example " + indices[0]);
                    }
                    return base.batch(indices);
                }
            };
            MultiNodeIterator it = MultiNodeIterator.over(c.rank() == 0 ? failing : null, 4, true, false, 0, c, 0);
            check.equal("first batch", 4L, it.next().size());
            check.throwsWith("second batch", it::next, "disk on fire at example 4");
            check.throwsWith("batch larger than the data set",
                    () -> MultiNodeIterator.over(c.rank() == 0 ? ramp(N, 0) : null, N + 1, true, false, 0, c, 0),
                    "batch size 11 is larger than the data set (10 examples)");
            check.throwsWith("null at the master", () -> new MultiNodeIterator(null, c, 0), "null iterator");
        });
        s.put("MultiNodeIterator: a master failing to reset or to describe its iterator fails every rank",
                (c, check) -> {
            int master = c.size() - 1;
            boolean[] broken = {false};
            SerialIterator serial = new SerialIterator(ramp(N, 0), 4, true, false, 0);
            BatchIterator failing = new ForwardingIterator(serial) {
                @Override
                public void reset() {
                    if (broken[0]) {
                        throw new DatasetException("cannot rewind the tape");
                    }
                    super.reset();
                }

                @Override
                public long epoch() {
                    if (broken[0]) {
                        throw new IllegalStateException("epoch counter lost");
                    }
                    return super.epoch();
                }
            };
            MultiNodeIterator it = new MultiNodeIterator(c.rank() == master ? failing : null, c, master);
            check.equal("first batch", 4L, it.next().size());
            it.reset();
            check.equal("iteration after a good reset", 0L, it.iteration());
            check.equal("first batch after the reset", 4L, it.next().size());
            broken[0] = true;
            check.throwsWith("reset", it::reset, "cannot rewind the tape");
            check.equal("state kept after the failed reset", 1L, it.iteration());
            check.throwsWith("construction", () -> new MultiNodeIterator(c.rank() == master ? failing : null, c,
                    master), "epoch counter lost");
            broken[0] = false;
            // Every rank is still in step: the next batch is the second one everywhere.
            Batch b = it.next();
            check.equal("second batch ids", Arrays.toString(new long[] {4, 5, 6, 7}), Arrays.toString(ids(b.field(2))));
            c.barrier();
            check.isTrue("no hang", true, "");
        });
        s.put("SynchronizedIterator shares the order, not the data", (c, check) -> {
            // every rank holds different values for the same examples, and a different seed
            SynchronizedIterator it = SynchronizedIterator.create(ramp(N, 100.0 * c.rank()), 3, true,
                    777 + c.rank(), c);
            SerialIterator ref = new SerialIterator(ramp(N, 0), 3, true, true, 777);
            for (int k = 0; k < 5; k++) {
                Batch b = it.next();
                long[] want = ref.nextIndices();
                check.equal("indices " + k, Arrays.toString(want), Arrays.toString(ids(b.field(2))));
                check.tensorsClose("own data " + k, ramp(N, 100.0 * c.rank()).batch(want).field(0), b.field(0), 0);
                check.equal("new epoch " + k, ref.isNewEpoch(), it.isNewEpoch());
            }
        });
        s.put("SynchronizedIterator.of keeps the iterator's order", (c, check) -> {
            SynchronizedIterator it = SynchronizedIterator.of(new SerialIterator(ramp(N, 0), 3, true), c);
            SerialIterator ref = new SerialIterator(ramp(N, 0), 3, true);
            for (int k = 0; k < 5; k++) {
                check.equal("indices " + k, Arrays.toString(ref.nextIndices()), Arrays.toString(it.nextIndices()));
            }
        });
        s.put("ranks disagreeing on the data set length fail everywhere", (c, check) -> {
            int n = c.size() > 1 && c.rank() == 1 ? N - 1 : N;
            String want = c.size() > 1 ? "rank 1 has 9" : "";
            String others = c.size() == 2 ? "rank 0 has 10" : c.size() == 3 ? "ranks 0, 2 have 10" : "ranks 0, 2, 3 have 10";
            if (c.size() == 1) {
                check.equal("one rank takes everything", (long) N, Datasets.scatterIndices(ramp(N, 0), c).size());
                return;
            }
            check.throwsWith("scatterIndices", () -> Datasets.scatterIndices(ramp(n, 0), c),
                    "every rank must have the same data set length in scatterIndices", others, want);
            check.throwsWith("SynchronizedIterator", () -> SynchronizedIterator.create(ramp(n, 0), 2, true, 1, c),
                    "every rank must have the same data set length in SynchronizedIterator", want);
            check.throwsWith("scatterIndex", () -> Datasets.scatterIndex(n, c, true),
                    "every rank must have the same number of examples in scatterIndex", want);
            int bs = c.rank() == c.size() - 1 ? N + 5 : 2;
            check.throwsWith("SynchronizedIterator batch larger than the data set on one rank",
                    () -> SynchronizedIterator.create(ramp(N, 0), bs, true, 1, c),
                    "rank " + (c.size() - 1) + ": batch size 15 is larger than the data set");
        });
        s.put("scatterIndices of more examples than an index array holds fails on every rank", (c, check) -> {
            Dataset<Long> huge = new Dataset<>() {
                @Override
                public long size() {
                    return 3_000_000_000L;
                }

                @Override
                public Long get(long index) {
                    return index;
                }
            };
            int root = c.size() - 1;
            check.throwsWith("shuffled: the root cannot draw the order", () -> Datasets.scatterIndices(huge, c, root, true, 1, true),
                    "scatterIndices failed on one rank", "rank " + root + ": a shuffled order of 3000000000 examples",
                    "more indices than one Java array holds");
            if (c.size() == 1) {
                check.throwsWith("in order: one rank's part is too long", () -> Datasets.scatterIndices(huge, c, 0, false, 0, true),
                        "rank 0: one rank's part of 3000000000 examples");
            }
            check.equal("ranks in step afterwards", c.size(), c.allreduceObj(1, Integer::sum));
        });
        s.put("missing and truncated IDX files fail every rank", (c, check) -> {
            Path dir = c.rank() == 0 ? Files.createTempDirectory("mn4j-idx") : null;
            check.throwsWith("missing", () -> Datasets.loadOnRank(c, 0, () -> FashionMnist.load(dir, true)),
                    "rank 0", "train-images-idx3-ubyte[.gz] not found");
            if (c.rank() == 0) {
                byte[] header = {0, 0, 8, 3, 0, 0, 0, 5, 0, 0, 0, 28, 0, 0, 0, 28, 1, 2, 3};
                Files.write(dir.resolve("train-images-idx3-ubyte"), header);
                Files.write(dir.resolve("train-labels-idx1-ubyte"), new byte[] {0, 0, 8, 1, 0, 0, 0, 5, 1, 2, 3, 4, 5});
            }
            check.throwsWith("truncated", () -> Datasets.loadOnRank(c, 0, () -> FashionMnist.load(dir, true)),
                    "rank 0", "truncated", "3920 bytes of data", "only 3 bytes follow");
            if (c.rank() == 0) {
                Files.delete(dir.resolve("train-images-idx3-ubyte"));
                Files.delete(dir.resolve("train-labels-idx1-ubyte"));
                Files.delete(dir);
            }
            check.throwsWith("scatterDataset with a null data set at the root",
                    () -> Datasets.scatterDataset(null, c), "null data set");
        });
        s.put("evaluator weighs unequal parts by their size", (c, check) -> {
            // disjoint parts of 0..N-1 have different sizes for 3 and 4 ranks; rank 0 also adds nothing of "only0" elsewhere
            TensorDataset part = Datasets.scatterDataset(c.rank() == 0 ? ramp(N, 0) : null, c, 0, false, 0, false);
            Metrics m = MultiNodeEvaluator.evaluate(c, part, 3,
                    b -> Map.of("id", b.field(2).to(torch.ScalarType.Double).mean().item_double()));
            check.close("mean id over all examples", (N - 1) / 2.0, m.mean("id"), 1e-12);
            check.equal("count", (long) N, m.count("id"));
            Metrics only0 = MultiNodeEvaluator.aggregate(c, c.rank() == 0 ? new Metrics().addMean("acc", 0.75, 8)
                    : new Metrics());
            check.close("a metric from one rank only", 0.75, only0.mean("acc"), 1e-12);
            check.equal("its count", 8L, only0.count("acc"));
            // ranks with no data at all (empty parts)
            TensorDataset tiny = Datasets.scatterDataset(c.rank() == 0 ? ramp(2, 0) : null, c, 0, false, 0, false);
            Metrics t = MultiNodeEvaluator.evaluate(c, tiny, 4,
                    b -> Map.of("id", b.field(2).to(torch.ScalarType.Double).mean().item_double()));
            check.close("two examples over " + c.size() + " ranks", 0.5, t.mean("id"), 1e-12);
        });
        s.put("evaluator starts every evaluation afresh and checks the batch size everywhere", (c, check) -> {
            TensorDataset part = Datasets.scatterDataset(c.rank() == 0 ? ramp(N, 0) : null, c, 0, false, 0, false);
            SerialIterator it = new SerialIterator(part, 2, false);
            for (int pass = 1; pass <= 2; pass++) {
                Metrics m = MultiNodeEvaluator.evaluate(c, it,
                        b -> Map.of("id", b.field(2).to(torch.ScalarType.Double).mean().item_double()));
                check.close("mean id, evaluation " + pass, (N - 1) / 2.0, m.mean("id"), 1e-12);
                check.equal("count, evaluation " + pass, (long) N, m.count("id"));
            }
            // with 3 and 4 ranks some parts are empty: those ranks must fail too, not wait
            TensorDataset tiny = Datasets.scatterDataset(c.rank() == 0 ? ramp(2, 0) : null, c, 0, false, 0, false);
            check.throwsWith("batch size 0", () -> MultiNodeEvaluator.evaluate(c, tiny, 0, b -> Map.of()),
                    "batch size must be at least 1, got 0");
        });
        return s;
    }

    /** A BatchIterator that does what {@code base} does, for tests that override one method. */
    static class ForwardingIterator implements BatchIterator {
        private final BatchIterator base;

        ForwardingIterator(BatchIterator base) {
            this.base = base;
        }

        @Override
        public boolean hasNext() {
            return base.hasNext();
        }

        @Override
        public Batch next() {
            return base.next();
        }

        @Override
        public int batchSize() {
            return base.batchSize();
        }

        @Override
        public long datasetSize() {
            return base.datasetSize();
        }

        @Override
        public boolean repeat() {
            return base.repeat();
        }

        @Override
        public long epoch() {
            return base.epoch();
        }

        @Override
        public double epochDetail() {
            return base.epochDetail();
        }

        @Override
        public double previousEpochDetail() {
            return base.previousEpochDetail();
        }

        @Override
        public boolean isNewEpoch() {
            return base.isNewEpoch();
        }

        @Override
        public long iteration() {
            return base.iteration();
        }

        @Override
        public void reset() {
            base.reset();
        }
    }
}
