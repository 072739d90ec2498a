package io.mn4j.iterators;

import java.util.SplittableRandom;
import java.util.random.RandomGenerator;

/** Seeded random permutations (Fisher-Yates), the same on every JVM for the same generator state. */
public final class Permutations {
    private Permutations() {
    }

    /** A uniformly random permutation of {@code [0, n)} drawn from {@code SplittableRandom(seed)}. */
    public static int[] of(int n, long seed) {
        return of(n, new SplittableRandom(seed));
    }

    /** A uniformly random permutation of {@code [0, n)} drawn from {@code random}. */
    public static int[] of(int n, RandomGenerator random) {
        int[] p = new int[n];
        for (int i = 0; i < n; i++) {
            p[i] = i;
        }
        for (int i = n - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
        return p;
    }
}
