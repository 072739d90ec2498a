package io.mn4j.examples.gnn;

import io.mn4j.iterators.EpochStats;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

/**
 * One epoch of {@code TrainGnn} as rank 0 reports it: the trainer's numbers (loss before the step,
 * accuracies after it, over all partitions), the epoch's wall time on rank 0, the bytes all ranks
 * sent during it (all of mn4j's traffic, and the part the shard managers sent for neighbourhood
 * aggregation), and the resident set size of every rank after it (current and peak).
 */
public record GnnEpoch(EpochStats stats, long bytesSentAllRanks, long aggregationBytesAllRanks, long[] rssBytes, long[] peakRssBytes) {

    /** CSV column names for a job of {@code ranks} ranks. */
    public static String csvHeader(int ranks) {
        StringBuilder sb = new StringBuilder("epoch,loss,train_accuracy,val_accuracy,test_accuracy,val_loss,seconds,bytes_sent,bytes_sent_aggregation,max_rss_mib");
        for (int r = 0; r < ranks; r++) {
            sb.append(",peak_rss_mib_rank").append(r);
        }
        return sb.toString();
    }

    /** The CSV line (the loss as the shortest text that reads back exactly, so runs can be compared bitwise). */
    public String csvLine() {
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "%d,%s,%.6f,%.6f,%.6f,%.6f,%.4f,%d,%d,%.1f", stats.epoch(),
                Double.toString(stats.trainLoss()), stats.trainAccuracy(), stats.validationAccuracy(), stats.testAccuracy(),
                stats.validationLoss(), stats.seconds(), bytesSentAllRanks,
                aggregationBytesAllRanks, maxRssBytes() / 1048576.0));
        for (long p : peakRssBytes) {
            sb.append(String.format(Locale.ROOT, ",%.1f", p / 1048576.0));
        }
        return sb.toString();
    }

    /** Largest current resident set over the ranks. */
    public long maxRssBytes() {
        return LongStream.of(rssBytes).max().orElse(-1);
    }

    /** The line printed per epoch. */
    public String humanLine(int epochs) {
        String width = String.valueOf(epochs);
        String peaks = peakRssBytes.length <= 4
                ? Arrays.stream(peakRssBytes).mapToObj(p -> String.format(Locale.ROOT, "%.0f", p / 1048576.0)).collect(Collectors.joining("|"))
                : String.format(Locale.ROOT, "max %.0f", LongStream.of(peakRssBytes).max().orElse(0) / 1048576.0);
        return String.format(Locale.ROOT,
                "epoch %" + width.length() + "d/%s  loss %.4f  train %6.2f%%  val %6.2f%%  test %6.2f%%  %7.3f s  sent %s (aggregation %s)"
                        + "  peak RSS %s MiB",
                stats.epoch(), width, stats.trainLoss(), 100 * stats.trainAccuracy(), 100 * stats.validationAccuracy(), 100 * stats.testAccuracy(),
                stats.seconds(), bytes(bytesSentAllRanks), bytes(aggregationBytesAllRanks), peaks);
    }

    /** Bytes in KiB/MiB/GiB with one or two decimals. */
    public static String bytes(long b) {
        if (b < 1024) {
            return b + " B";
        }
        if (b < 1024 * 1024) {
            return String.format(Locale.ROOT, "%.1f KiB", b / 1024.0);
        }
        if (b < 1024L * 1024 * 1024) {
            return String.format(Locale.ROOT, "%.2f MiB", b / 1048576.0);
        }
        return String.format(Locale.ROOT, "%.2f GiB", b / 1073741824.0);
    }
}
