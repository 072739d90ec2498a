package io.mn4j.gnn.random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class KeepMaskTest {
    @Test
    void fillAgreesWithKeptElementByElementForOddAndEvenWidthsInBothPrecisions() {
        KeepMask keep = new KeepMask(0.4);
        for (int width : new int[] {1, 2, 7, 8, 33}) {
            float[] f = new float[width + 3];
            double[] d = new double[width + 3];
            long item = CounterHash.key(9, width);
            keep.fill(item, f, 3, width);
            keep.fill(item, d, 3, width);
            for (int j = 0; j < width; j++) {
                assertEquals(keep.value(item, j), d[3 + j], 0, "width " + width + ", element " + j);
                assertEquals((float) keep.value(item, j), f[3 + j], 0, "width " + width + ", element " + j);
            }
        }
    }

    @Test
    void keepsOneMinusPOfTheElementsIndependentlyOfTheItem() {
        KeepMask keep = new KeepMask(0.6);
        long kept = 0, both = 0, n = 200_000;
        for (long i = 0; i < n; i++) {
            boolean a = keep.kept(CounterHash.key(1, i), 0);
            boolean b = keep.kept(CounterHash.key(1, i), 1);
            kept += a ? 1 : 0;
            both += a && b ? 1 : 0;
        }
        assertEquals(0.4, kept / (double) n, 0.005);
        assertEquals(0.16, both / (double) n, 0.005, "neighbouring elements independent");
    }

    @Test
    void keysDifferInEveryPartAndProbabilitiesAreChecked() {
        assertNotEquals(CounterHash.key(1, 2, 3), CounterHash.key(1, 3, 2));
        assertNotEquals(CounterHash.key(1, 2, 3), CounterHash.key(2, 2, 3));
        assertThrows(IllegalArgumentException.class, () -> new KeepMask(1.0));
        assertThrows(IllegalArgumentException.class, () -> new KeepMask(-0.1));
    }
}
