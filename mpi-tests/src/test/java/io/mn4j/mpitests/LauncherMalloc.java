package io.mn4j.mpitests;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The malloc settings {@code scripts/mn4j-run} gives programs ({@code scripts/glibc-tunables.sh}),
 * as a launch environment: received tensors then take the path programs take under the launcher
 * (no pool of freed blocks); and glibc's defaults, under which the pool keeps freed blocks.
 */
public final class LauncherMalloc {
    /** glibc's own malloc settings, whatever the caller's shell exports (the pool is on). */
    public static final Map<String, String> GLIBC_DEFAULTS = Map.of("GLIBC_TUNABLES", "");

    private LauncherMalloc() {
    }

    /** {@code GLIBC_TUNABLES} as the launcher sets it, read from the script. */
    public static Map<String, String> env() {
        Path script = Path.of("..", "scripts", "glibc-tunables.sh");
        try {
            Matcher m = Pattern.compile("\\$\\{GLIBC_TUNABLES-([^}]+)\\}").matcher(Files.readString(script));
            if (!m.find()) {
                throw new IllegalStateException(script + " sets no default GLIBC_TUNABLES");
            }
            return Map.of("GLIBC_TUNABLES", m.group(1));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
