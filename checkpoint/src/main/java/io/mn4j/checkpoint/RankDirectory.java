package io.mn4j.checkpoint;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * One rank's checkpoints on its own host: {@code <dir>/rank-<r>/step-<step>/}, each holding the
 * rank's files and, last, {@code manifest.json}; a checkpoint being written is
 * {@code step-<step>.tmp} until its rename. Ranks never touch each other's folders, so several
 * ranks of a host may share {@code <dir>}, and so may every rank on a shared file system.
 */
final class RankDirectory {
    static final String MANIFEST = "manifest.json";
    static final String OWN = "own.pt";
    static final String REPLICATED = "replicated.pt";
    static final String VALUES = "values.json";
    private static final Pattern STEP = Pattern.compile("step-(\\d{12})");

    private final Path root;

    RankDirectory(Path dir, int rank) {
        this.root = dir.resolve("rank-" + rank);
    }

    Path root() {
        return root;
    }

    /** Where checkpoint {@code step} lives once committed. */
    Path committed(long step) {
        return root.resolve(String.format(Locale.ROOT, "step-%012d", step));
    }

    /** Where checkpoint {@code step} is written before its rename. */
    Path temporary(long step) {
        return root.resolve(String.format(Locale.ROOT, "step-%012d.tmp", step));
    }

    /** Steps of the committed checkpoints (those renamed into place), in increasing order. */
    List<Long> committedSteps() throws IOException {
        List<Long> steps = new ArrayList<>();
        if (!Files.isDirectory(root)) {
            return steps;
        }
        try (Stream<Path> s = Files.list(root)) {
            for (Path p : s.toList()) {
                Matcher m = STEP.matcher(p.getFileName().toString());
                if (m.matches() && Files.isDirectory(p)) {
                    steps.add(Long.parseLong(m.group(1)));
                }
            }
        }
        steps.sort(null);
        return steps;
    }

    /** Deletes what interrupted writes left behind ({@code *.tmp}). */
    void removeUnfinished() throws IOException {
        if (!Files.isDirectory(root)) {
            return;
        }
        try (Stream<Path> s = Files.list(root)) {
            for (Path p : s.toList()) {
                if (p.getFileName().toString().endsWith(".tmp")) {
                    DurableFiles.deleteTree(p);
                }
            }
        }
    }

    /** Deletes every committed checkpoint but the newest {@code keep}; returns the steps deleted. */
    List<Long> keepNewest(int keep) throws IOException {
        List<Long> steps = committedSteps();
        List<Long> gone = new ArrayList<>(steps.subList(0, Math.max(0, steps.size() - keep)));
        for (long s : gone) {
            DurableFiles.deleteTree(committed(s));
        }
        return gone;
    }

    /** Deletes committed checkpoints newer than {@code step}; returns their steps. */
    List<Long> removeNewerThan(long step) throws IOException {
        List<Long> gone = new ArrayList<>();
        for (long s : committedSteps()) {
            if (s > step) {
                DurableFiles.deleteTree(committed(s));
                gone.add(s);
            }
        }
        return gone;
    }
}
