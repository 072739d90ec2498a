package io.mn4j.gnn.train;

import io.mn4j.iterators.EpochStats;

/** A way to train a model on a partitioned graph, epoch by epoch. Collective: every rank calls the same methods in the same order. */
public interface Trainer {
    /** One epoch of training, then an evaluation of every split. */
    EpochStats epoch();

    /** One epoch of training without evaluation; returns the training loss over all ranks. */
    double trainEpoch();

    /** Accuracy on the train, val and test nodes of all partitions (no dropout, no autograd). */
    double[] evaluate();
}
