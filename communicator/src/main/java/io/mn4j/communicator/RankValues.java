package io.mn4j.communicator;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongFunction;
import java.util.stream.Collectors;

/** Every rank's value of something, described for the exceptions that every rank throws alike. */
final class RankValues {
    private RankValues() {
    }

    /** "rank r: problem" for each rank whose entry (in rank order) is not null. */
    static List<String> problems(List<String> perRank) {
        List<String> problems = new ArrayList<>();
        for (int r = 0; r < perRank.size(); r++) {
            if (perRank.get(r) != null) {
                problems.add("rank " + r + ": " + perRank.get(r));
            }
        }
        return problems;
    }

    /** Null when every rank's value (in rank order) is the same, else "rank 0 has 10; ranks 1, 2 have 9". */
    static String disagreement(List<?> perRank) {
        Map<Object, List<Integer>> ranksOf = new LinkedHashMap<>();
        for (int r = 0; r < perRank.size(); r++) {
            ranksOf.computeIfAbsent(perRank.get(r), v -> new ArrayList<>()).add(r);
        }
        if (ranksOf.size() == 1) {
            return null;
        }
        List<String> groups = new ArrayList<>();
        ranksOf.forEach((v, ranks) -> groups.add((ranks.size() == 1 ? "rank " : "ranks ")
                + ranks.stream().map(String::valueOf).collect(Collectors.joining(", "))
                + (ranks.size() == 1 ? " has " : " have ") + v));
        return String.join("; ", groups);
    }

    /** Whether field {@code at} of the {@code width}-long rows of {@code rows} differs between rows. */
    static boolean differs(long[] rows, int width, int at) {
        for (int r = width; r < rows.length; r += width) {
            if (rows[r + at] != rows[at]) {
                return true;
            }
        }
        return false;
    }

    /** "rank 0: v0, rank 1: v1, ...": field {@code at} of each rank's {@code width}-long row. */
    static String list(long[] rows, int width, int at, LongFunction<String> describe) {
        List<String> each = new ArrayList<>();
        for (int r = 0; r * width < rows.length; r++) {
            each.add("rank " + r + ": " + describe.apply(rows[r * width + at]));
        }
        return String.join(", ", each);
    }
}
