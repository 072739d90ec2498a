package io.mn4j.communicator;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The words of the {@link Watchdog}: what a rank answers when asked what it is doing, and the
 * report of a call that waited longer than the timeout, which names the ranks that did not answer,
 * and what each rank the call waits for answered.
 */
final class TimeoutReport {
    private static final String SETTINGS = "Communicator.setTimeout, -Dmn4j.timeout or MN4J_TIMEOUT";

    private TimeoutReport() {
    }

    /**
     * This rank's answer: a line per call in progress (the communicator's id, the collective's
     * number or 0, what the call is, for how long), nothing when it is in none.
     */
    static String state(List<OpenCall.Snapshot> open, long now) {
        StringBuilder sb = new StringBuilder();
        for (OpenCall.Snapshot s : open) {
            sb.append(s.members() == null ? "-" : s.members().id).append('\t')
                    .append(s.isCollective() ? s.collective() : 0).append('\t')
                    .append(s.describe()).append('\t').append(seconds(s.seconds(now))).append('\n');
        }
        return sb.toString();
    }

    /**
     * The report of {@code stuck}, a call of world rank {@code me}: {@code answers} by world rank
     * (null for a rank that did not answer within {@code graceSeconds}), or null when no rank was
     * asked.
     */
    static String of(OpenCall.Snapshot stuck, int me, String[] answers, long timeoutNanos, double graceSeconds, long now) {
        StringBuilder sb = new StringBuilder();
        sb.append(JobLayout.rank(me)).append(": ").append(stuck.describe()).append(" has waited at least ")
                .append(seconds(stuck.seconds(now))).append(", more than the timeout of ").append(seconds(timeoutNanos / 1e9))
                .append(" (").append(SETTINGS).append("); ending the job");
        if (answers == null) {
            return sb.append("\n  (no other rank was asked what it is doing: MPI runs without THREAD_MULTIPLE)").toString();
        }
        // Every rank that did not answer, awaited or not: a rank this call waits for may itself
        // wait for one of them.
        List<Integer> silent = new ArrayList<>();
        for (int r = 0; r < answers.length; r++) {
            if (r != me && answers[r] == null) {
                silent.add(r);
            }
        }
        List<Integer> same = new ArrayList<>();
        List<String> elsewhere = new ArrayList<>();
        for (int r : awaited(stuck, me)) {
            if (answers[r] != null && inSameCollective(stuck, answers[r])) {
                same.add(r);
            } else if (answers[r] != null) {
                elsewhere.add(JobLayout.rank(r) + ", " + doing(answers[r]));
            }
        }
        String why = stuck.isCollective() ? "not arrived: " : "the peer: ";
        if (!silent.isEmpty()) {
            sb.append("\n  not answering within ").append(seconds(graceSeconds)).append(" (stopped, or cut off from this host): ")
                    .append(JobLayout.ranks(silent));
        }
        elsewhere.forEach(line -> sb.append("\n  ").append(why).append(line));
        if (!same.isEmpty()) {
            sb.append("\n  waiting in the same call: ").append(JobLayout.ranks(same));
        }
        return sb.toString();
    }

    /** The world ranks the call waits for: the peer, or the other members of a collective. */
    private static List<Integer> awaited(OpenCall.Snapshot stuck, int me) {
        List<Integer> ranks = new ArrayList<>();
        if (!stuck.isCollective()) {
            if (stuck.peerWorldRank() >= 0 && stuck.peerWorldRank() != me) {
                ranks.add(stuck.peerWorldRank());
            }
            return ranks;
        }
        for (int i = 0; i < stuck.members().size(); i++) {
            int r = stuck.members().worldRank(i);
            if (r != me) {
                ranks.add(r);
            }
        }
        return ranks;
    }

    private static boolean inSameCollective(OpenCall.Snapshot stuck, String answer) {
        if (!stuck.isCollective()) {
            return false;
        }
        String prefix = stuck.members().id + "\t" + stuck.collective() + "\t";
        return answer.lines().anyMatch(l -> l.startsWith(prefix));
    }

    /** "in recv (rank 1 from rank 2, tag 5) for at least 6.0 s", or "in no communicator call". */
    private static String doing(String answer) {
        List<String> calls = new ArrayList<>();
        answer.lines().filter(l -> !l.isBlank()).forEach(l -> {
            String[] f = l.split("\t");
            calls.add("in " + (f.length > 2 ? f[2] : l) + (f.length > 3 ? " for at least " + f[3] : ""));
        });
        return calls.isEmpty() ? "in no communicator call" : String.join("; ", calls);
    }

    private static String seconds(double s) {
        return String.format(Locale.ROOT, "%.1f s", s);
    }
}
