package io.mn4j.iterators;

import java.io.Serializable;

/**
 * What one training epoch measured, over all ranks: training loss and accuracy, validation
 * accuracy and loss, test accuracy and loss, the epoch's training time, training examples per second and the
 * bytes this rank sent. A program that does not measure a value gives {@code NaN} (or -1 bytes).
 * Losses are what the trainer reports: a mean over the epoch's batches, or the loss before the
 * step for full-graph training.
 */
public record EpochStats(int epoch, double trainLoss, double trainAccuracy, double validationAccuracy, double validationLoss,
        double testLoss, double testAccuracy, double seconds, double examplesPerSecond, long bytesSent) implements Serializable {
}
