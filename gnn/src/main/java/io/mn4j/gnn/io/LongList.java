package io.mn4j.gnn.io;

import java.util.Arrays;

/** A growable {@code long[]} for readers that do not know their row count in advance. */
final class LongList {
    private long[] a;
    private int n;

    LongList() {
        this(1024);
    }

    /** With room for {@code capacity} values before it grows (a count the file declares, say). */
    LongList(int capacity) {
        a = new long[Math.max(16, capacity)];
    }

    void add(long v) {
        if (n == a.length) {
            if (n >= Integer.MAX_VALUE - 8) {
                throw new IllegalStateException("more than " + n + " values: too many for one array");
            }
            a = Arrays.copyOf(a, (int) Math.min(Integer.MAX_VALUE - 8, 2L * n));
        }
        a[n++] = v;
    }

    int size() {
        return n;
    }

    /** The values, in a new array of exactly {@link #size()} (the list's own when it is full). */
    long[] toArray() {
        return n == a.length ? a : Arrays.copyOf(a, n);
    }
}
