package io.mn4j.iterators;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.NoSuchElementException;
import java.util.Arrays;
import java.util.Random;

/**
 * Chainer's {@code SerialIterator}: consecutive mini-batches over a data set, optionally in a
 * shuffled order that is redrawn at every epoch from a seeded generator (so the same seed gives
 * the same batches in every process and every run). With {@code repeat}, a batch that crosses the
 * end of an epoch is completed with the first examples of the next epoch's order, and every
 * batch has exactly {@link #batchSize()} examples; without it, the last batch of the one epoch may
 * be smaller.
 *
 * <p>Not thread-safe. Batches are materialised only by {@link #next()}; {@link #nextIndices()}
 * advances the same way but returns the indices, for callers that fetch examples themselves.
 */
public final class SerialIterator implements BatchIterator {
    private final Dataset<?> dataset;
    private final int batchSize;
    private final boolean repeat;
    private final boolean shuffle;
    private final long seed;
    private final int n;
    private Random random;
    private long[] order;
    private int position;
    private long epoch;
    private boolean newEpoch;
    private long iteration;
    private double previousEpochDetail;

    /** A non-shuffling iterator. */
    public SerialIterator(Dataset<?> dataset, int batchSize, boolean repeat) {
        this(dataset, batchSize, repeat, false, 0);
    }

    /**
     * An iterator over {@code dataset}.
     *
     * @param batchSize examples per batch, at least 1 and at most the size of the data set
     * @param repeat wrap around to new epochs forever (training) or stop after one (evaluation)
     * @param shuffle visit the examples in a random order drawn from {@code seed}, anew each epoch
     * @param seed seed of the order (ignored without shuffle)
     * @throws DatasetException if the batch size does not fit the data set
     */
    public SerialIterator(Dataset<?> dataset, int batchSize, boolean repeat, boolean shuffle, long seed) {
        String problem = check(dataset, batchSize);
        if (problem != null) {
            throw new DatasetException(problem);
        }
        this.dataset = dataset;
        this.batchSize = batchSize;
        this.repeat = repeat;
        this.shuffle = shuffle;
        this.seed = seed;
        this.n = (int) dataset.size();
        reset();
    }

    /** Why an iterator over {@code dataset} with that batch size cannot be made, or null if it can. */
    static String check(Dataset<?> dataset, int batchSize) {
        if (dataset == null) {
            return "the data set is null";
        }
        long size = dataset.size();
        if (size > Integer.MAX_VALUE - 8) {
            return "data sets of more than 2^31 examples are not supported (got " + size + ")";
        }
        if (batchSize < 1) {
            return "batch size must be at least 1, got " + batchSize;
        }
        if (batchSize > size) {
            return "batch size " + batchSize + " is larger than the data set (" + size + " examples)";
        }
        return null;
    }

    @Override
    public void reset() {
        random = new Random(seed);
        order = shuffle ? permutation(n, random) : null;
        position = 0;
        epoch = 0;
        newEpoch = false;
        iteration = 0;
        previousEpochDetail = -1;
    }

    /**
     * A uniformly random permutation of [0, n) drawn from {@code random} (Fisher-Yates), the same
     * for the same generator state on every JVM.
     */
    public static long[] permutation(int n, Random random) {
        return Arrays.stream(Permutations.of(n, random)).asLongStream().toArray();
    }

    @Override
    public boolean hasNext() {
        return repeat || epoch == 0;
    }

    @Override
    public Batch next() {
        return dataset.batch(nextIndices());
    }

    /** Advances like {@link #next()} and returns the data set indices of that batch. */
    public long[] nextIndices() {
        if (!hasNext()) {
            throw new NoSuchElementException("the iterator finished its epoch (repeat=false); call reset()");
        }
        previousEpochDetail = epochDetail();
        int i = position;
        int end = i + batchSize;
        int take = Math.min(end, n) - i;
        long[] idx = new long[end >= n && !repeat ? take : batchSize];
        for (int k = 0; k < take; k++) {
            idx[k] = order == null ? i + k : order[i + k];
        }
        if (end >= n) {
            if (repeat) {
                int rest = end - n;
                if (shuffle) {
                    order = permutation(n, random);
                }
                for (int k = 0; k < rest; k++) {
                    idx[take + k] = order == null ? k : order[k];
                }
                position = rest;
            } else {
                position = 0;
            }
            epoch++;
            newEpoch = true;
        } else {
            position = end;
            newEpoch = false;
        }
        iteration++;
        return idx;
    }

    @Override
    public int batchSize() {
        return batchSize;
    }

    @Override
    public long datasetSize() {
        return n;
    }

    @Override
    public boolean repeat() {
        return repeat;
    }

    /** Whether the order is shuffled. */
    public boolean shuffle() {
        return shuffle;
    }

    /** The seed of the shuffled order. */
    public long seed() {
        return seed;
    }

    @Override
    public long epoch() {
        return epoch;
    }

    @Override
    public double epochDetail() {
        return epoch + (double) position / n;
    }

    @Override
    public double previousEpochDetail() {
        return previousEpochDetail;
    }

    @Override
    public boolean isNewEpoch() {
        return newEpoch;
    }

    @Override
    public long iteration() {
        return iteration;
    }

    /**
     * Where the iterator stands, for a checkpoint: position, counters, this epoch's order and the
     * generator that draws the next orders (serialized), so that {@link #restore} continues with
     * exactly the batches this iterator would have given.
     */
    public record State(long epoch, int position, long iteration, boolean newEpoch, double previousEpochDetail, long[] order,
            byte[] random) implements Serializable {
    }

    /** This iterator's state now (a copy). */
    public State state() {
        try (ByteArrayOutputStream bytes = new ByteArrayOutputStream(); ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(random);
            out.flush();
            return new State(epoch, position, iteration, newEpoch, previousEpochDetail, order == null ? null : order.clone(),
                    bytes.toByteArray());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Continues from {@code s}, a state of an iterator over a data set of the same size with the
     * same shuffling.
     *
     * @throws DatasetException if {@code s} does not fit this iterator
     */
    public void restore(State s) {
        if ((s.order() != null) != shuffle || (s.order() != null && s.order().length != n) || s.position() < 0 || s.position() > n) {
            throw new DatasetException("a saved iterator state (" + (s.order() == null ? "unshuffled" : "shuffled over " + s.order().length)
                    + ", position " + s.position() + ") does not fit this iterator (" + (shuffle ? "shuffled" : "unshuffled") + ", "
                    + n + " examples)");
        }
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(s.random()))) {
            random = (Random) in.readObject();
        } catch (IOException | ClassNotFoundException | ClassCastException e) {
            throw new DatasetException("a saved iterator state has an unreadable generator: " + e);
        }
        order = s.order() == null ? null : s.order().clone();
        position = s.position();
        epoch = s.epoch();
        newEpoch = s.newEpoch();
        iteration = s.iteration();
        previousEpochDetail = s.previousEpochDetail();
    }

    /** The data set iterated over. */
    public Dataset<?> dataset() {
        return dataset;
    }
}
