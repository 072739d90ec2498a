package io.mn4j.examples.support;

import java.io.PrintStream;

/**
 * A one-line text progress bar redrawn in place with a carriage return, at most a few times a
 * second. It draws only on a terminal (a file or pipe gets the plain per-epoch lines alone);
 * disabled bars print nothing.
 */
public final class ProgressBar {
    private static final int WIDTH = 30;
    private static final long MIN_REDRAW_NANOS = 250_000_000L;
    private final PrintStream out;
    private final String label;
    private final long total;
    private final boolean enabled;
    private final long start = System.nanoTime();
    private long lastDraw;
    private int lastLength;

    /**
     * @param out where to draw (usually {@code System.out} on rank 0)
     * @param label text before the bar
     * @param total the count that means 100%
     * @param enabled false for a bar that prints nothing (other ranks, {@code --no-progress}); a bar
     *     off a terminal prints nothing either
     */
    public ProgressBar(PrintStream out, String label, long total, boolean enabled) {
        this.out = out;
        this.label = label;
        this.total = Math.max(1, total);
        this.enabled = enabled && onTerminal();
    }

    /**
     * Whether this program's output reaches a terminal. Under {@code mpirun} a rank's output is a
     * pipe whatever the user's is, so {@code scripts/mn4j-run} passes what its own is as
     * {@code MN4J_TERMINAL} (1 or 0); without it, only a program outside mpirun with a console draws.
     */
    public static boolean onTerminal() {
        String passed = System.getenv("MN4J_TERMINAL");
        if (passed != null) {
            return passed.trim().equals("1");
        }
        return System.console() != null && System.getenv("OMPI_COMM_WORLD_SIZE") == null;
    }

    /** Shows {@code done} of the total, followed by {@code suffix} (for example the running loss). */
    public void update(long done, String suffix) {
        if (!enabled) {
            return;
        }
        long now = System.nanoTime();
        if (done < total && now - lastDraw < MIN_REDRAW_NANOS) {
            return;
        }
        lastDraw = now;
        double frac = Math.min(1.0, (double) done / total);
        int filled = (int) Math.round(frac * WIDTH);
        double secs = (now - start) / 1e9;
        String eta = done > 0 && done < total ? String.format(" eta %.0fs", secs * (total - done) / done) : "";
        String line = String.format("%s [%s%s] %d/%d %3.0f%%%s %s", label, "#".repeat(filled),
                "-".repeat(WIDTH - filled), done, total, frac * 100, eta, suffix == null ? "" : suffix);
        out.print("\r" + line + " ".repeat(Math.max(0, lastLength - line.length())));
        out.flush();
        lastLength = line.length();
    }

    /** Erases the bar so the next line starts clean. */
    public void finish() {
        if (!enabled || lastLength == 0) {
            return;
        }
        out.print("\r" + " ".repeat(lastLength) + "\r");
        out.flush();
        lastLength = 0;
    }
}
