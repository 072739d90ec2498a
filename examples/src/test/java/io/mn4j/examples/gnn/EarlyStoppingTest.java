package io.mn4j.examples.gnn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.iterators.EpochStats;
import org.junit.jupiter.api.Test;

/** The GAT paper's early stopping: patience counts epochs that improve neither validation figure. */
class EarlyStoppingTest {
    private static EpochStats epoch(int e, double valAccuracy, double valLoss) {
        return new EpochStats(e, 1.0, 0.5, valAccuracy, valLoss, Double.NaN, 0.7 + e / 1000.0, 0.1, Double.NaN, 0);
    }

    @Test
    void keepsTheLastEpochThatReachedBothAndStopsAfterThePatience() {
        EarlyStopping s = new EarlyStopping(2);
        assertTrue(s.observe(epoch(1, 0.50, 1.00)), "the first epoch is the best so far on both");
        assertFalse(s.observe(epoch(2, 0.60, 1.10)), "accuracy up, loss up: patience resets, model not kept");
        assertEquals(1, s.kept().epoch());
        assertFalse(s.observe(epoch(3, 0.55, 0.95)), "loss down, accuracy below its best: patience resets");
        assertTrue(s.observe(epoch(4, 0.60, 0.90)), "equal best accuracy and lowest loss: kept");
        assertFalse(s.observe(epoch(5, 0.59, 0.91)));
        assertFalse(s.shouldStop(), "one epoch without improvement");
        assertFalse(s.observe(epoch(6, 0.58, 0.92)));
        assertTrue(s.shouldStop(), "two epochs without improvement");
        assertEquals(4, s.kept().epoch());
        assertEquals(0.704, s.kept().testAccuracy(), 0);
    }

    @Test
    void refusesWhatItCannotJudge() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new EarlyStopping(0));
        assertTrue(e.getMessage().contains("--patience must be at least 1, got 0"), e.getMessage());
        EarlyStopping s = new EarlyStopping(5);
        e = assertThrows(IllegalArgumentException.class, () -> s.observe(epoch(1, Double.NaN, Double.NaN)));
        assertTrue(e.getMessage().contains("--patience needs validation nodes"), e.getMessage());
    }
}
