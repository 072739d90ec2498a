package io.mn4j.mpitests;

/** The trend of a series measured once per step (resident memory per epoch or round, say). */
public final class Trend {
    private Trend() {
    }

    /** Least-squares slope of {@code ys[from..]} against the index, per step. */
    public static double slope(long[] ys, int from) {
        int n = ys.length - from;
        double mx = (n - 1) / 2.0, my = 0;
        for (int i = 0; i < n; i++) {
            my += ys[from + i] / (double) n;
        }
        double sxy = 0, sxx = 0;
        for (int i = 0; i < n; i++) {
            sxy += (i - mx) * (ys[from + i] - my);
            sxx += (i - mx) * (i - mx);
        }
        return sxy / sxx;
    }
}
