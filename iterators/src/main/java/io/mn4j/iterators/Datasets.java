package io.mn4j.iterators;

import io.mn4j.communicator.Agreement;
import io.mn4j.communicator.Communicator;
import io.mn4j.tensor.Tensors;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.Supplier;
import org.bytedeco.pytorch.Tensor;

/**
 * Distributing data sets over the ranks of a communicator, ChainerMN's {@code scatter_dataset},
 * {@code scatter_index} and {@code create_empty_dataset}.
 *
 * <p><b>Partitions.</b> Of {@code n} examples over {@code p} ranks, rank {@code i} gets
 * [{@code b_i}, {@code e_i}) of the (optionally shuffled) order, with {@code b_i = floor(n*i/p)}.
 * With {@code forceEqualLength} every rank gets {@code ceil(n/p)} examples, {@code e_i = b_i +
 * ceil(n/p)}, so consecutive windows overlap where {@code p} does not divide {@code n} (n=10, p=4:
 * [0,3), [2,5), [5,8), [7,10)) and every rank runs the same number of iterations per epoch. Without
 * it, {@code e_i = floor(n*(i+1)/p)}: disjoint parts that cover the data set exactly once (n=10,
 * p=4: [0,2), [2,5), [5,7), [7,10)).
 *
 * <p>Every method here is collective: all ranks of the communicator call it, in the same order. A
 * bad input on any rank (a null data set at the root, lengths that differ between ranks, items that
 * cannot be batched) makes every rank throw the same {@link DatasetException}; none is left waiting.
 */
public final class Datasets {
    private Datasets() {
    }

    /**
     * The bounds [b, e) of each of {@code parts} ranks' part of {@code n} examples (see the class
     * comment): {@code result[i] = {b_i, e_i}}.
     */
    public static long[][] partitionBounds(long n, int parts, boolean forceEqualLength) {
        if (n < 0 || parts < 1) {
            throw new IllegalArgumentException("need n >= 0 and parts >= 1, got n=" + n + ", parts=" + parts);
        }
        long sub = (n + parts - 1) / parts;
        long[][] out = new long[parts][];
        for (int i = 0; i < parts; i++) {
            long b = Math.multiplyExact(n, i) / parts;
            long e = forceEqualLength ? b + sub : Math.multiplyExact(n, i + 1) / parts;
            out[i] = new long[] {b, e};
        }
        return out;
    }

    /** A random permutation of [0, n) determined by {@code seed} (the same on every JVM). */
    public static long[] shuffledOrder(long n, long seed) {
        return SerialIterator.permutation(indexCount(n, "a shuffled order"), new Random(seed));
    }

    /**
     * ChainerMN's {@code create_empty_dataset}: as many examples as {@code dataset}, each with no
     * field. Ranks whose model inputs come from other ranks iterate over it so that they run the
     * same number of iterations and epochs as the ranks that read data.
     */
    public static TensorDataset createEmptyDataset(Dataset<?> dataset) {
        return TensorDataset.empty(dataset.size());
    }

    /**
     * Runs {@code loader} on rank {@code rank} only (the one that reads the data, for
     * {@link #scatterDataset} or {@link MultiNodeIterator}) and returns its result there, null
     * elsewhere. If it throws, every rank throws a {@link DatasetException} with its message, so a
     * missing or truncated file at one rank stops the whole job with the reason on every rank.
     */
    public static <D> D loadOnRank(Communicator comm, int rank, Supplier<D> loader) {
        checkRoot(comm, rank);
        return loadEverywhere(comm, comm.rank() == rank ? loader : () -> null);
    }

    /**
     * Runs {@code loader} on every rank; if it throws on any, every rank throws a
     * {@link DatasetException} listing each failing rank's message.
     */
    public static <D> D loadEverywhere(Communicator comm, Supplier<D> loader) {
        D data = null;
        RuntimeException failure = null;
        try {
            data = loader.get();
        } catch (RuntimeException e) {
            failure = e;
        }
        Agreement.noProblems(comm, "loading the data set", describe(failure), failure);
        return data;
    }

    /** {@link #scatterDataset(Dataset, Communicator, int, boolean, long, boolean)} from rank 0, in order, equal lengths. */
    public static TensorDataset scatterDataset(Dataset<?> dataset, Communicator comm) {
        return scatterDataset(dataset, comm, 0, false, 0, true);
    }

    /**
     * ChainerMN's {@code scatter_dataset}: the root's data set is split into one part per rank (see
     * the class comment) and each rank receives its part's examples, batched into tensors that keep
     * their dtypes and shapes. Only the root reads {@code dataset}; other ranks may pass null.
     *
     * @param dataset the data set at the root; its items must be batchable (see {@link Dataset#batch})
     * @param root the rank that holds the data
     * @param shuffle split a random permutation (drawn from the root's {@code seed}) instead of the
     *     data set's order
     * @param forceEqualLength every part has ceil(n/size) examples (overlapping windows), or
     *     disjoint parts that cover the data set
     * @return this rank's part
     */
    public static TensorDataset scatterDataset(Dataset<?> dataset, Communicator comm, int root, boolean shuffle,
            long seed, boolean forceEqualLength) {
        checkRoot(comm, root);
        int size = comm.size();
        ScatterHeader header = null;
        List<Batch> parts = null;
        if (comm.rank() == root) {
            try {
                if (dataset == null) {
                    throw new DatasetException("the root passed a null data set");
                }
                long n = dataset.size();
                long[][] bounds = partitionBounds(n, size, forceEqualLength);
                long[] order = shuffle ? shuffledOrder(n, seed) : null;
                parts = new ArrayList<>(size);
                long[] partSizes = new long[size];
                Batch template = null;
                for (int r = 0; r < size; r++) {
                    long[] indices = partIndices(bounds[r], order);
                    // No batch of no item: Batch.collate cannot know its fields, and a data set's
                    // own batch() need not expect it.
                    Batch part = indices.length == 0 ? null : dataset.batch(indices);
                    parts.add(part);
                    if (part == null || part.size() == 0) {
                        continue;
                    }
                    partSizes[r] = part.size();
                    if (template == null) {
                        template = part;
                    } else if (part.numFields() != template.numFields()) {
                        throw new DatasetException("parts have different numbers of fields (" + template.numFields()
                                + " and " + part.numFields() + ")");
                    }
                }
                // Empty parts get zero rows of the non-empty parts' fields (of an empty data set,
                // whatever its batch of no item is).
                for (int r = 0; r < size; r++) {
                    if (parts.get(r) == null || parts.get(r).size() == 0) {
                        parts.set(r, template != null ? emptyLike(template) : dataset.batch(new long[0]));
                    }
                }
                header = new ScatterHeader(null, partSizes, parts.get(0).numFields());
            } catch (RuntimeException e) {
                header = new ScatterHeader("scatterDataset at root " + root + ": " + e.getMessage(), null, 0);
            }
        }
        header = comm.bcastObj(header, root);
        if (header.error != null) {
            throw new DatasetException(header.error);
        }
        List<Tensor> mine = new ArrayList<>(header.numFields);
        for (int f = 0; f < header.numFields; f++) {
            List<Tensor> sends = null;
            if (comm.rank() == root) {
                sends = new ArrayList<>(size);
                for (Batch part : parts) {
                    sends.add(part.field(f));
                }
            }
            mine.add(comm.scatter(sends, root));
        }
        return new TensorDataset(header.partSizes[comm.rank()], mine);
    }

    /** {@link #scatterIndices(Dataset, Communicator, int, boolean, long, boolean)} from rank 0, in order, equal lengths. */
    public static <T> SubDataset<T> scatterIndices(Dataset<T> dataset, Communicator comm) {
        return scatterIndices(dataset, comm, 0, false, 0, true);
    }

    /**
     * Like {@link #scatterDataset} for data sets that every rank can read itself (a file on shared
     * storage, a generated set): only the indices of each part travel, from the root, and each rank
     * returns a view of its own copy. All ranks must pass data sets of the same length.
     *
     * @param seed the root's seed of the shuffled order (other ranks' values are ignored)
     */
    public static <T> SubDataset<T> scatterIndices(Dataset<T> dataset, Communicator comm, int root,
            boolean shuffle, long seed, boolean forceEqualLength) {
        checkRoot(comm, root);
        Agreement.noProblems(comm, "scatterIndices", dataset == null ? "passed a null data set" : null);
        long n = dataset.size();
        Agreement.requireSame(comm, "data set length in scatterIndices", n);
        List<Tensor> sends = null;
        RuntimeException failure = null;
        if (comm.rank() == root) {
            try {
                long[][] bounds = partitionBounds(n, comm.size(), forceEqualLength);
                long[] order = shuffle ? shuffledOrder(n, seed) : null;
                sends = new ArrayList<>(comm.size());
                for (long[] be : bounds) {
                    sends.add(Tensors.longs(partIndices(be, order)));
                }
            } catch (RuntimeException e) {
                failure = e;
            }
        }
        // The other ranks would otherwise wait in the scatter for a root that has left.
        Agreement.noProblems(comm, "scatterIndices", describe(failure), failure);
        long[] mine = Tensors.toLongArray(comm.scatter(sends, root));
        return new SubDataset<>(dataset, mine);
    }

    /**
     * ChainerMN's {@code scatter_index}: this rank's bounds {b, e} of {@code n} examples. Every
     * rank must pass the same {@code n} and {@code forceEqualLength}.
     */
    public static long[] scatterIndex(long n, Communicator comm, boolean forceEqualLength) {
        Agreement.requireSame(comm, "number of examples in scatterIndex", n);
        Agreement.requireSame(comm, "forceEqualLength flag in scatterIndex", forceEqualLength);
        return partitionBounds(n, comm.size(), forceEqualLength)[comm.rank()].clone();
    }

    /** {@code n} as the length of an index array, or an exception naming {@code what} is too large. */
    private static int indexCount(long n, String what) {
        if (n > MAX_ARRAY_LENGTH) {
            throw new DatasetException(what + " of " + n + " examples needs more indices than one Java array holds ("
                    + MAX_ARRAY_LENGTH + ")");
        }
        return (int) n;
    }

    /** The longest array every JVM allocates (some keep a few header words of the int range). */
    private static final int MAX_ARRAY_LENGTH = Integer.MAX_VALUE - 8;

    /** The message of a failure, with its type when that says more than the message. */
    private static String describe(RuntimeException e) {
        if (e == null) {
            return null;
        }
        return e instanceof DatasetException || e instanceof IllegalArgumentException
                ? String.valueOf(e.getMessage()) : e.toString();
    }

    private static void checkRoot(Communicator comm, int root) {
        if (root < 0 || root >= comm.size()) {
            throw new IllegalArgumentException("root rank " + root + " is outside [0, " + comm.size() + ")");
        }
    }

    /** What the root tells every rank before the parts: an error, or the part sizes and field count. */
    private record ScatterHeader(String error, long[] partSizes, int numFields) implements Serializable {
    }

    /** A batch of no example with the fields of {@code template} (zero rows, same dtypes and trailing shapes). */
    private static Batch emptyLike(Batch template) {
        List<Tensor> fields = new ArrayList<>(template.numFields());
        for (Tensor f : template.fields()) {
            fields.add(f.narrow(0, 0, 0));
        }
        return new Batch(0, fields);
    }

    /** The data set indices of part [b, e) of {@code order} (or of the identity when it is null). */
    private static long[] partIndices(long[] bounds, long[] order) {
        long[] idx = new long[indexCount(bounds[1] - bounds[0], "one rank's part")];
        for (int i = 0; i < idx.length; i++) {
            idx[i] = order == null ? bounds[0] + i : order[(int) bounds[0] + i];
        }
        return idx;
    }
}
