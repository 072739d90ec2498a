package io.mn4j.examples.support;

import io.mn4j.checkpoint.Checkpointer;
import io.mn4j.communicator.Communicator;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import picocli.CommandLine.Option;

/** The checkpoint options every training program shares (a picocli mixin). */
public final class CheckpointOptions {
    @Option(names = "--checkpoint-dir", paramLabel = "DIR",
            description = "Save checkpoints into DIR/rank-<r>/ on each rank's own host (no shared file system needed).")
    public Path dir;

    @Option(names = "--checkpoint-every", paramLabel = "N[it]",
            description = "Save a checkpoint every N epochs, or with the suffix 'it' every N iterations where the program has them "
                    + "(default: 1, every epoch).")
    public String every = "1";

    @Option(names = "--checkpoint-keep", paramLabel = "K", description = "Keep the newest K checkpoints (default: ${DEFAULT-VALUE}).")
    public int keep = 2;

    @Option(names = "--resume",
            description = "Continue from the newest checkpoint in --checkpoint-dir that is complete on every rank (from the beginning if "
                    + "there is none).")
    public boolean resume;

    /** The interval of {@link #every}, in epochs or iterations. */
    public record Interval(long count, boolean iterations) {
    }

    /**
     * Checks the values (a bad one is a usage error).
     *
     * @param iterationsAllowed whether the program counts iterations (the others save per epoch only)
     */
    public void validate(boolean iterationsAllowed) {
        Interval i = interval();
        if (i.iterations() && !iterationsAllowed) {
            throw new IllegalArgumentException("--checkpoint-every " + every + ": this program saves per epoch only (give N epochs)");
        }
        if (keep < 1) {
            throw new IllegalArgumentException("--checkpoint-keep must be at least 1, got " + keep);
        }
        if (dir == null && resume) {
            throw new IllegalArgumentException("--resume needs --checkpoint-dir");
        }
    }

    /** {@link #every} parsed. */
    public Interval interval() {
        String s = every.trim().toLowerCase(Locale.ROOT);
        boolean its = s.endsWith("it");
        try {
            long n = Long.parseLong(its ? s.substring(0, s.length() - 2) : s);
            if (n < 1) {
                throw new NumberFormatException();
            }
            return new Interval(n, its);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--checkpoint-every takes a positive count of epochs (N) or iterations (Nit), got '"
                    + every + "'");
        }
    }

    /** Whether checkpoints are asked for. */
    public boolean enabled() {
        return dir != null;
    }

    /** A checkpointer for this job (collective), or null without --checkpoint-dir. */
    public Checkpointer open(Communicator comm, Map<String, String> identity) {
        return dir == null ? null : new Checkpointer(comm, dir, keep, identity);
    }
}
