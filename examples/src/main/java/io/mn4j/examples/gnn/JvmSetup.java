package io.mn4j.examples.gnn;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Process settings the GNN programs make first thing in {@code main}, before any JavaCPP class loads. */
public final class JvmSetup {
    private JvmSetup() {
    }

    /**
     * Sets JavaCPP's limit on this process's resident memory, unless given on the command line
     * ({@code -Dorg.bytedeco.javacpp.maxPhysicalBytes}), to 90% of the memory available at start
     * (the RAM, less what other processes hold) divided by the ranks on this node. JavaCPP's own
     * default (twice the maximum heap) ignores how many ranks share the machine; past the limit an
     * allocation first runs the garbage collector, then throws an OutOfMemoryError, which beats
     * being killed by the system.
     */
    public static void limitNativeMemory() {
        if (System.getProperty("org.bytedeco.javacpp.maxPhysicalBytes") != null
                || System.getProperty("org.bytedeco.javacpp.maxphysicalbytes") != null) {
            return;
        }
        List<String> meminfo = meminfo();
        long total = bytes(meminfo, "MemTotal:");
        long available = bytes(meminfo, "MemAvailable:");
        long ram = available > 0 && total > 0 ? Math.min(total, available) : total;
        if (ram <= 0) {
            return;
        }
        int local = 1;
        String env = System.getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
        try {
            local = env == null ? 1 : Math.max(1, Integer.parseInt(env.trim()));
        } catch (NumberFormatException ignored) {
            // one rank per node then
        }
        System.setProperty("org.bytedeco.javacpp.maxPhysicalBytes", String.valueOf(ram / 10 * 9 / local));
    }

    /** The programs print what the library logs at info level: keep its warnings only, unless told otherwise. */
    public static void quietLibraryLogs() {
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
    }

    /** The lines of /proc/meminfo, or none. */
    private static List<String> meminfo() {
        try {
            return Files.readAllLines(Path.of("/proc/meminfo"));
        } catch (IOException | RuntimeException e) {
            return List.of();
        }
    }

    /** A /proc/meminfo field in bytes, or -1. */
    private static long bytes(List<String> meminfo, String field) {
        for (String line : meminfo) {
            if (line.startsWith(field)) {
                try {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                } catch (NumberFormatException e) {
                    return -1;
                }
            }
        }
        return -1;
    }
}
