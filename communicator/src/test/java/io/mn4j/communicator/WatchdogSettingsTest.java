package io.mn4j.communicator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The timeout's settings: -Dmn4j.timeout before MN4J_TIMEOUT, units, off, and a clear error. */
class WatchdogSettingsTest {
    private static long seconds(double s) {
        return (long) (s * 1e9);
    }

    @Test
    void unsetIsTheDefault() {
        assertEquals(Watchdog.DEFAULT.toNanos(), Watchdog.fromSettings(null, null));
        assertEquals(Duration.ofMinutes(30), Watchdog.DEFAULT);
    }

    @Test
    void secondsOrUnits() {
        assertEquals(seconds(90), Watchdog.fromSettings("90", null));
        assertEquals(seconds(2.5), Watchdog.fromSettings(null, "2.5s"));
        assertEquals(seconds(1800), Watchdog.fromSettings("30m", null));
        assertEquals(seconds(3600), Watchdog.fromSettings(" 1h ", null));
        assertEquals(0, Watchdog.fromSettings("0", null), "0 turns the timeout off");
    }

    @Test
    void thePropertyWinsOverTheEnvironment() {
        assertEquals(seconds(5), Watchdog.fromSettings("5", "600"));
    }

    @Test
    void aBadSettingNamesItselfAndTheForm() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Watchdog.fromSettings(null, "10 minutes"));
        assertTrue(e.getMessage().startsWith("MN4J_TIMEOUT=10 minutes: not a timeout"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Watchdog.fromSettings("-1", null));
        assertTrue(e.getMessage().startsWith("-Dmn4j.timeout=-1: not a timeout") && e.getMessage().contains("30m"), e.getMessage());
    }
}
