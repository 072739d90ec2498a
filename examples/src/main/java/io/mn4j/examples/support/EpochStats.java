package io.mn4j.examples.support;

import java.io.Serializable;

/**
 * What one training epoch measured: mean training loss and accuracy over the epoch's batches,
 * test loss and accuracy after it, the epoch's training time (evaluation excluded), training
 * examples per second, and the resident memory of rank 0 and the largest over all ranks.
 */
public record EpochStats(int epoch, double trainLoss, double trainAccuracy, double testLoss, double testAccuracy,
        double seconds, double examplesPerSecond, long rssBytes, long maxRssBytes) implements Serializable {

    /** Column names of {@link #csvLine()}. */
    public static final String CSV_HEADER =
            "epoch,train_loss,train_accuracy,test_loss,test_accuracy,seconds,examples_per_second,rss_mib,max_rss_mib";

    /** The record as one CSV line (full precision for losses, so runs can be compared exactly). */
    public String csvLine() {
        return String.format(java.util.Locale.ROOT, "%d,%.9g,%.6f,%.9g,%.6f,%.3f,%.1f,%.1f,%.1f", epoch, trainLoss,
                trainAccuracy, testLoss, testAccuracy, seconds, examplesPerSecond, rssBytes / 1048576.0,
                maxRssBytes / 1048576.0);
    }

    /** The record as the line the examples print. */
    public String humanLine() {
        return String.format(java.util.Locale.ROOT,
                "epoch %3d  loss %.4f  acc %.2f%%  test loss %.4f  test acc %.2f%%  %6.1fs  %7.0f ex/s  RSS %s (max over ranks %s)",
                epoch, trainLoss, trainAccuracy * 100, testLoss, testAccuracy * 100, seconds, examplesPerSecond,
                Memory.mib(rssBytes), Memory.mib(maxRssBytes));
    }
}
