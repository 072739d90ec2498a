package io.mn4j.iterators;

import java.util.Iterator;

/**
 * Mini-batches over a data set with Chainer's epoch bookkeeping. A repeating iterator never ends;
 * a non-repeating one ends after one epoch ({@link #hasNext()} false, {@link #next()} throws
 * {@link java.util.NoSuchElementException}).
 */
public interface BatchIterator extends Iterator<Batch> {
    /** Examples per batch (the last batch of a non-repeating epoch may be smaller). */
    int batchSize();

    /** Examples in one epoch. */
    long datasetSize();

    /** Whether the iterator wraps around to new epochs. */
    boolean repeat();

    /** Completed epochs. */
    long epoch();

    /**
     * Epochs completed as a fraction: {@code epoch + position / datasetSize}. After the batch that
     * ends epoch e of a repeating iterator it is {@code e + rest / datasetSize}, where {@code rest}
     * is the number of examples of the next epoch that batch already took.
     */
    double epochDetail();

    /** {@link #epochDetail()} before the last {@link #next()}; -1 before the first one. */
    double previousEpochDetail();

    /** True when the last batch completed an epoch. */
    boolean isNewEpoch();

    /** Batches returned so far. */
    long iteration();

    /** Batches in one epoch, the last (partial) one included: ceil(datasetSize / batchSize). */
    default long batchesPerEpoch() {
        return (datasetSize() + batchSize() - 1) / batchSize();
    }

    /** Back to the state after construction (epoch 0, position 0, a fresh shuffle if any). */
    void reset();
}
