package io.mn4j.gnn.util;

import java.util.SplittableRandom;

/** Seeded random permutations, the same on every JVM for the same seed. */
public final class Permutations {
    private Permutations() {
    }

    /** A uniformly random permutation of {@code [0, n)} (Fisher-Yates, drawn from {@code SplittableRandom(seed)}). */
    public static int[] of(int n, long seed) {
        int[] p = new int[n];
        for (int i = 0; i < n; i++) {
            p[i] = i;
        }
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = n - 1; i > 0; i--) {
            int j = r.nextInt(i + 1);
            int t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
        return p;
    }
}
