package io.mn4j.gnn.train;

import io.mn4j.iterators.EpochStats;

/** A way to train a model on a partitioned graph, epoch by epoch. Collective: every rank calls the same methods in the same order. */
public interface Trainer {
    /** One epoch of training, then an evaluation of every split. */
    EpochStats epoch();

    /** One epoch of training without evaluation; returns the training loss over all ranks. */
    double trainEpoch();

    /** Epochs trained so far. */
    int epochsDone();

    /** Continues as if {@code epochs} epochs had been trained (a resume from a checkpoint; the model and optimizer are restored apart). */
    void resumeAfter(int epochs);

    /** {@code epochs}, checked for {@link #resumeAfter}. */
    static int epochsDone(int epochs) {
        if (epochs < 0) {
            throw new IllegalArgumentException("epochs done must be at least 0, got " + epochs);
        }
        return epochs;
    }

    /**
     * Accuracy on the train, val and test nodes of all partitions, then the mean cross-entropy on
     * the val nodes (no dropout, no autograd).
     */
    double[] evaluate();
}
