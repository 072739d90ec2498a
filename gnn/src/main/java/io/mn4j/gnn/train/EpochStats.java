package io.mn4j.gnn.train;

/**
 * One epoch over all partitions: training loss (before the step) and accuracies, wall time, and
 * bytes this rank sent.
 */
public record EpochStats(int epoch, double loss, double trainAcc, double valAcc, double testAcc, double seconds,
        long bytesSent) {
}
