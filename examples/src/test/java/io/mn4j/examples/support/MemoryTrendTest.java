package io.mn4j.examples.support;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class MemoryTrendTest {
    private static final long MIB = 1L << 20;

    @Test
    void warmUpThatLevelsOffShowsNoGrowthAfterIt() {
        // 25 % rise over the first 600 of 1,200 epochs, then flat: what a long run's allocator does.
        long[] rss = new long[1200];
        for (int e = 0; e < rss.length; e++) {
            rss[e] = (800 + Math.min(e, 600) * 200 / 600) * MIB;
        }
        String line = MemoryTrend.describe(rss);
        assertTrue(line.contains("after warm-up (epochs 601-1200) peak 1000.0 MiB, growth +0.0 MiB per 100 epochs"), line);
        assertTrue(line.startsWith("resident memory 800.0 MiB after epoch 1, peak 1000.0 MiB"), line);
    }

    @Test
    void aSteadyRiseIsReportedPer100Epochs() {
        long[] rss = new long[300];
        for (int e = 0; e < rss.length; e++) {
            rss[e] = 500 * MIB + e * MIB / 2;
        }
        assertEquals(50 * MIB, MemoryTrend.growthPer100Epochs(rss, 150), 1e-3);
        assertTrue(MemoryTrend.describe(rss).contains("growth +50.0 MiB per 100 epochs"), MemoryTrend.describe(rss));
    }

    @Test
    void shortRunsAndMissingReadingsSaySo() {
        assertTrue(MemoryTrend.describe(new long[] {MIB, 2 * MIB}).contains("runs of 20+ epochs"));
        assertEquals("resident memory: not available on this system", MemoryTrend.describe(new long[] {-1, -1}));
        assertEquals("resident memory: not available on this system", MemoryTrend.describe(new long[0]));
    }
}
