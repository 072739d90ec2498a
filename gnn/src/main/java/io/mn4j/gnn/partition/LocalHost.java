package io.mn4j.gnn.partition;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The name of the host this process runs on, for messages about files that each host keeps for
 * itself ("partition 2 is missing on host h1").
 */
public final class LocalHost {
    private static final Path KERNEL_HOSTNAME = Path.of("/proc/sys/kernel/hostname");

    private LocalHost() {
    }

    /**
     * The kernel's host name on Linux (what {@code hostname} prints, with no name lookup that could
     * wait for an unreachable DNS server), else Java's; "unknown host" when neither is known.
     */
    public static String name() {
        try {
            if (Files.isReadable(KERNEL_HOSTNAME)) {
                String n = Files.readString(KERNEL_HOSTNAME).strip();
                if (!n.isEmpty()) {
                    return n;
                }
            }
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "unknown host";
        }
    }
}
