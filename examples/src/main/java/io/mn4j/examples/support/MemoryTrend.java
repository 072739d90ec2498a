package io.mn4j.examples.support;

import java.util.Locale;

/**
 * How resident memory developed over a run, told so that allocator warm-up (a rise that levels
 * off) and a leak (a steady rise) look different: the peak after warm-up and the growth per 100
 * epochs, both over the second half of the run, where warm-up is over.
 */
public final class MemoryTrend {
    /** Runs shorter than this cannot tell warm-up from growth. */
    static final int MIN_EPOCHS = 20;

    private MemoryTrend() {
    }

    /**
     * One line for a run's summary.
     *
     * @param rssBytes resident set size after each epoch (the first element is epoch 1), for
     *     example the largest over the ranks; negative where it could not be read
     */
    public static String describe(long[] rssBytes) {
        int n = rssBytes.length;
        if (n == 0 || rssBytes[0] < 0) {
            return "resident memory: not available on this system";
        }
        String start = String.format(Locale.ROOT, "resident memory %s after epoch 1, peak %s", Memory.mib(rssBytes[0]),
                Memory.mib(max(rssBytes, 0)));
        if (n < MIN_EPOCHS) {
            return start + " (runs of " + MIN_EPOCHS + "+ epochs also tell warm-up from growth)";
        }
        int from = n / 2;
        return start + String.format(Locale.ROOT, "; after warm-up (epochs %d-%d) peak %s, growth %+.1f MiB per 100 epochs",
                from + 1, n, Memory.mib(max(rssBytes, from)), growthPer100Epochs(rssBytes, from) / 1048576.0);
    }

    /** Least-squares slope of {@code rssBytes[from..]} against the epoch, in bytes per 100 epochs. */
    static double growthPer100Epochs(long[] rssBytes, int from) {
        int m = rssBytes.length - from;
        double meanX = (m - 1) / 2.0;
        double meanY = 0;
        for (int i = 0; i < m; i++) {
            meanY += rssBytes[from + i] / (double) m;
        }
        double sxy = 0;
        double sxx = 0;
        for (int i = 0; i < m; i++) {
            sxy += (i - meanX) * (rssBytes[from + i] - meanY);
            sxx += (i - meanX) * (i - meanX);
        }
        return sxx == 0 ? 0 : 100 * sxy / sxx;
    }

    private static long max(long[] values, int from) {
        long m = Long.MIN_VALUE;
        for (int i = from; i < values.length; i++) {
            m = Math.max(m, values[i]);
        }
        return m;
    }
}
