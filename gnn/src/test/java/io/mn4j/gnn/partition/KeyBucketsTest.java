package io.mn4j.gnn.partition;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The external sort: every key back, in order, whole high values per chunk, within the budget, files deleted. */
class KeyBucketsTest {
    @TempDir
    Path tmp;

    /** Sorts {@code keys} through buckets; checks chunk sizes against the capacity and that no high value spans two chunks. */
    private long[] sortThrough(long[] keys, long highLimit, long expected, long budget) throws IOException {
        long[] out = new long[keys.length];
        int[] at = {0};
        long[] lastHigh = {-1};
        try (KeyBuckets b = new KeyBuckets(tmp, "t", highLimit, expected, budget)) {
            for (long k : keys) b.add(k);
            int capacity = b.capacity();
            b.drain((chunk, count) -> {
                assertTrue(count <= capacity, count + " keys in one chunk, capacity " + capacity);
                if (count > 0) {
                    assertTrue(chunk[0] >>> 32 > lastHigh[0], "a high value in two chunks, or chunks out of order");
                    lastHigh[0] = chunk[count - 1] >>> 32;
                }
                System.arraycopy(chunk, 0, out, at[0], count);
                at[0] += count;
            });
        }
        assertEquals(keys.length, at[0]);
        try (Stream<Path> left = Files.list(tmp)) {
            assertEquals(0, left.count(), "bucket files deleted");
        }
        return out;
    }

    @Test
    void underestimatedAndSkewedKeysAreSplitAgain() throws IOException {
        SplittableRandom r = new SplittableRandom(3);
        long[] keys = new long[60_000];
        for (int i = 0; i < keys.length; i++) {
            // Half the keys on the first 1% of the high values: their bucket must be split, twice over.
            long high = i % 2 == 0 ? r.nextInt(100) : r.nextInt(10_000);
            keys[i] = high << 32 | r.nextInt() & 0xffffffffL;
        }
        long[] sorted = keys.clone();
        Arrays.sort(sorted);
        assertArrayEquals(sorted, sortThrough(keys, 10_000, 10, 64 << 10));
        assertArrayEquals(sorted, sortThrough(keys, 10_000, keys.length, 64 << 10));
        assertArrayEquals(sorted, sortThrough(keys, 10_000, keys.length, 64 << 20));
    }

    @Test
    void oneHighValueLargerThanTheBudgetIsAClearError() throws IOException {
        long[] keys = new long[10_000];
        for (int i = 0; i < keys.length; i++) keys[i] = 5L << 32 | i;
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> sortThrough(keys, 100, 100, 64 << 10));
        assertTrue(e.getMessage().contains("node 5 alone has 10000: raise the memory budget"), e.getMessage());
    }
}
