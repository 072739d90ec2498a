package io.mn4j.checkpoint;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The collective choice of the checkpoint to resume from, computed alike on every rank from what
 * every rank found in its own folder: the newest step whose manifest every rank has, with the same
 * text. Checkpoints of another job size or identity are errors, not candidates: resuming past them
 * silently would train something else than asked.
 */
final class ResumeChoice {
    /** A committed checkpoint as one rank found it. */
    record Found(long step, String manifestSha256, int ranks, List<String> identityDifferences, String unreadable)
            implements Serializable {
    }

    /** The outcome: the step (-1: none), a note for the user, or a problem that stops every rank. */
    record Outcome(long step, String note, String problem) {
    }

    private ResumeChoice() {
    }

    /**
     * @param found  per rank, the checkpoints it has
     * @param dir    the checkpoint directory, for messages
     */
    static Outcome choose(List<List<Found>> found, int jobSize, String dir) {
        List<String> problems = new ArrayList<>();
        for (int r = 0; r < found.size(); r++) {
            for (Found f : found.get(r)) {
                String where = "rank " + r + ": checkpoint " + f.step() + " in " + dir;
                if (f.unreadable() != null) {
                    problems.add(where + " has an unreadable manifest (" + f.unreadable() + ")");
                } else if (f.ranks() != jobSize) {
                    problems.add(where + " was written by a job of " + f.ranks() + " ranks, this job has " + jobSize
                            + " (resume with -np " + f.ranks() + ", or use another checkpoint directory)");
                } else if (!f.identityDifferences().isEmpty()) {
                    problems.add(where + " is of another run: " + String.join("; ", f.identityDifferences()));
                }
            }
        }
        if (!problems.isEmpty()) {
            return new Outcome(-1, null, String.join("; ", problems));
        }
        // step -> manifest digest -> ranks that have it
        TreeMap<Long, Map<String, TreeSet<Integer>>> byStep = new TreeMap<>();
        for (int r = 0; r < found.size(); r++) {
            for (Found f : found.get(r)) {
                byStep.computeIfAbsent(f.step(), k -> new TreeMap<>()).computeIfAbsent(f.manifestSha256(), k -> new TreeSet<>()).add(r);
            }
        }
        long chosen = -1;
        List<String> skipped = new ArrayList<>();
        for (long step : byStep.descendingKeySet()) {
            Map<String, TreeSet<Integer>> versions = byStep.get(step);
            if (versions.size() == 1 && versions.values().iterator().next().size() == jobSize) {
                chosen = step;
                break;
            }
            skipped.add(describeIncomplete(step, versions, jobSize));
        }
        if (byStep.isEmpty()) {
            return new Outcome(-1, "no checkpoint in " + dir + ": starting from the beginning", null);
        }
        String fallback = String.join("; ", skipped);
        if (chosen < 0) {
            return new Outcome(-1, "no checkpoint in " + dir + " is complete on every rank (" + fallback
                    + "): starting from the beginning", null);
        }
        String note = "resuming from checkpoint " + chosen + " in " + dir;
        if (!skipped.isEmpty()) {
            note += ", the newest complete on every rank (" + fallback + ")";
        }
        return new Outcome(chosen, note, null);
    }

    private static String describeIncomplete(long step, Map<String, TreeSet<Integer>> versions, int jobSize) {
        if (versions.size() > 1) {
            return "checkpoint " + step + " differs between ranks " + versions.values() + ": parts of different runs";
        }
        TreeSet<Integer> missing = new TreeSet<>();
        for (int r = 0; r < jobSize; r++) {
            missing.add(r);
        }
        missing.removeAll(versions.values().iterator().next());
        return "checkpoint " + step + " is missing on rank" + (missing.size() == 1 ? " " : "s ") + missing;
    }
}
