package io.mn4j.bench;

import io.mn4j.examples.support.Memory;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Resident memory of this process for {@link GnnMemoryBenchmark}, measured in phases: the peak
 * (VmHWM) is reset to the current resident size (VmRSS) at the start of each phase by writing
 * {@code 5} to {@code /proc/self/clear_refs} (Linux 4.0 and later), so a phase's peak is its own
 * and the run's peak is the largest phase peak.
 */
final class GnnMemoryProbe {
    private static final Path CLEAR_REFS = Path.of("/proc/self/clear_refs");
    private final boolean canReset;

    GnnMemoryProbe() {
        this.canReset = resetPeak();
    }

    /** Whether phase peaks are exact (otherwise every peak is the peak since process start). */
    boolean canReset() {
        return canReset;
    }

    long rss() {
        return Memory.rssBytes();
    }

    long peak() {
        return Memory.peakRssBytes();
    }

    /**
     * Sum over the Java heap's pools of their peak use since {@link #resetHeapPeaks}: an upper
     * bound of the heap pages the run touched, which stay resident (the heap is part of the RSS).
     */
    long heapPeak() {
        long sum = 0;
        for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
            if (p.getType() == MemoryType.HEAP && p.getPeakUsage() != null) {
                sum += p.getPeakUsage().getUsed();
            }
        }
        return sum;
    }

    void resetHeapPeaks() {
        for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
            if (p.getType() == MemoryType.HEAP) {
                p.resetPeakUsage();
            }
        }
    }

    /** Starts a new phase: the peak becomes the current resident size. */
    boolean reset() {
        return canReset && resetPeak();
    }

    private static boolean resetPeak() {
        try {
            Files.writeString(CLEAR_REFS, "5", StandardCharsets.US_ASCII);
            return true;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }
}
