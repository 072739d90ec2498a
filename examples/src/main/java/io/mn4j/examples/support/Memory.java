package io.mn4j.examples.support;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Resident set size of this process from {@code /proc/self/status}: what the process really
 * holds in RAM, LibTorch's native tensors included (the Java heap figures do not see them).
 */
public final class Memory {
    private Memory() {
    }

    /** Current resident set size in bytes (VmRSS), or -1 where /proc is not available. */
    public static long rssBytes() {
        return statusKiB("VmRSS:") * 1024;
    }

    /** Peak resident set size in bytes since the process started (VmHWM), or -1. */
    public static long peakRssBytes() {
        return statusKiB("VmHWM:") * 1024;
    }

    /** Bytes as MiB with one decimal. */
    public static String mib(long bytes) {
        return bytes < 0 ? "n/a" : String.format("%.1f MiB", bytes / 1048576.0);
    }

    private static long statusKiB(String key) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith(key)) {
                    return Long.parseLong(line.substring(key.length()).trim().split("\\s+")[0]);
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }
}
