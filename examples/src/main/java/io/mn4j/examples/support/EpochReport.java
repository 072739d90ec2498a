package io.mn4j.examples.support;

import io.mn4j.iterators.EpochStats;
import java.util.Locale;

/**
 * An epoch as the examples report it: the epoch's numbers and the resident memory of rank 0 and
 * the largest over all ranks, as a CSV line and as the line printed on rank 0.
 */
public record EpochReport(EpochStats stats, long rssBytes, long maxRssBytes) {

    /** Column names of {@link #csvLine()}. */
    public static final String CSV_HEADER =
            "epoch,train_loss,train_accuracy,test_loss,test_accuracy,seconds,examples_per_second,rss_mib,max_rss_mib";

    /** The record as one CSV line (losses as the shortest text that reads back exactly, so runs can be compared bitwise). */
    public String csvLine() {
        return String.format(Locale.ROOT, "%d,%s,%.6f,%s,%.6f,%.3f,%.1f,%.1f,%.1f", stats.epoch(), Double.toString(stats.trainLoss()),
                stats.trainAccuracy(), Double.toString(stats.testLoss()), stats.testAccuracy(), stats.seconds(), stats.examplesPerSecond(),
                rssBytes / 1048576.0, maxRssBytes / 1048576.0);
    }

    /** The record as the line the examples print. */
    public String humanLine() {
        return String.format(Locale.ROOT,
                "epoch %3d  loss %.4f  acc %.2f%%  test loss %.4f  test acc %.2f%%  %6.1fs  %7.0f ex/s  RSS %s (max over ranks %s)",
                stats.epoch(), stats.trainLoss(), stats.trainAccuracy() * 100, stats.testLoss(), stats.testAccuracy() * 100,
                stats.seconds(), stats.examplesPerSecond(), Memory.mib(rssBytes), Memory.mib(maxRssBytes));
    }
}
