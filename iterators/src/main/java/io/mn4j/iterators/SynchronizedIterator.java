package io.mn4j.iterators;

import io.mn4j.communicator.Agreement;
import io.mn4j.communicator.Communicator;
import java.util.concurrent.ThreadLocalRandom;

/**
 * ChainerMN's {@code create_synchronized_iterator}: every rank iterates over its own data set in
 * the same order: shuffled from a seed that comes from rank 0, or in index order when the wrapped
 * iterator does not shuffle. Use it when
 * each rank holds different fields of the same examples (for instance one input modality per
 * rank), so batch {@code k} on every rank is made of the same example indices, without sending
 * any data.
 *
 * <p>Creation is collective and checks that all ranks agree on the data set length, the batch
 * size, {@code repeat} and {@code shuffle}; otherwise every rank throws a {@link DatasetException} naming each
 * rank's value. After that, iteration needs no communication.
 */
public final class SynchronizedIterator implements BatchIterator {
    private final SerialIterator inner;

    private SynchronizedIterator(SerialIterator inner) {
        this.inner = inner;
    }

    /** A synchronized iterator whose seed rank 0 draws at random. */
    public static SynchronizedIterator create(Dataset<?> dataset, int batchSize, boolean repeat, Communicator comm) {
        return create(dataset, batchSize, repeat, ThreadLocalRandom.current().nextLong(), comm);
    }

    /**
     * A synchronized iterator over this rank's {@code dataset}, shuffled from rank 0's
     * {@code seed} (other ranks' seeds are ignored).
     */
    public static SynchronizedIterator create(Dataset<?> dataset, int batchSize, boolean repeat, long seed,
            Communicator comm) {
        return create(dataset, batchSize, repeat, true, seed, comm);
    }

    /**
     * Replaces {@code it} by a synchronized iterator over the same data set, batch size, repeat and
     * shuffle (as ChainerMN keeps the wrapped iterator's order setting): without shuffle every rank
     * goes through its data set in order; with it, in the order of rank 0's seed.
     */
    public static SynchronizedIterator of(SerialIterator it, Communicator comm) {
        return create(it.dataset(), it.batchSize(), it.repeat(), it.shuffle(), it.seed(), comm);
    }

    private static SynchronizedIterator create(Dataset<?> dataset, int batchSize, boolean repeat, boolean shuffle,
            long seed, Communicator comm) {
        Agreement.noProblems(comm, "SynchronizedIterator", SerialIterator.check(dataset, batchSize));
        Agreement.requireSame(comm, "data set length in SynchronizedIterator", dataset.size());
        Agreement.requireSame(comm, "batch size in SynchronizedIterator", batchSize);
        Agreement.requireSame(comm, "repeat flag in SynchronizedIterator", repeat);
        Agreement.requireSame(comm, "shuffle flag in SynchronizedIterator", shuffle);
        long shared = comm.bcastObj(seed, 0);
        return new SynchronizedIterator(new SerialIterator(dataset, batchSize, repeat, shuffle, shared));
    }

    /** The shared seed of the order. */
    public long seed() {
        return inner.seed();
    }

    /** Advances like {@link #next()} and returns the indices of that batch (the same on every rank). */
    public long[] nextIndices() {
        return inner.nextIndices();
    }

    @Override
    public boolean hasNext() {
        return inner.hasNext();
    }

    @Override
    public Batch next() {
        return inner.next();
    }

    @Override
    public int batchSize() {
        return inner.batchSize();
    }

    @Override
    public long datasetSize() {
        return inner.datasetSize();
    }

    @Override
    public boolean repeat() {
        return inner.repeat();
    }

    @Override
    public long epoch() {
        return inner.epoch();
    }

    @Override
    public double epochDetail() {
        return inner.epochDetail();
    }

    @Override
    public double previousEpochDetail() {
        return inner.previousEpochDetail();
    }

    @Override
    public boolean isNewEpoch() {
        return inner.isNewEpoch();
    }

    @Override
    public long iteration() {
        return inner.iteration();
    }

    @Override
    public void reset() {
        inner.reset();
    }
}
