package io.mn4j.iterators;

import java.io.Serializable;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Running sums of named metrics, each with the number of examples it covers, so that means over
 * unequal parts combine correctly: the mean of a metric is its total sum over its total count,
 * never the mean of per-part means.
 */
public final class Metrics implements Serializable {
    private static final long serialVersionUID = 1L;
    private final LinkedHashMap<String, double[]> sums = new LinkedHashMap<>();

    /** Adds a batch's mean of {@code name} over {@code count} examples. */
    public Metrics addMean(String name, double mean, long count) {
        return addSum(name, mean * count, count);
    }

    /** Adds a sum of {@code name} over {@code count} examples. */
    public Metrics addSum(String name, double sum, long count) {
        if (count < 0) {
            throw new IllegalArgumentException("count must be >= 0, got " + count);
        }
        double[] s = sums.computeIfAbsent(name, k -> new double[2]);
        s[0] += sum;
        s[1] += count;
        return this;
    }

    /** Adds all of {@code other}'s sums and counts. */
    public Metrics addAll(Metrics other) {
        other.sums.forEach((k, v) -> addSum(k, v[0], (long) v[1]));
        return this;
    }

    /** Metric names, in the order first added. */
    public Set<String> names() {
        return Collections.unmodifiableSet(sums.keySet());
    }

    /** Total of {@code name} (0 if never added). */
    public double sum(String name) {
        double[] s = sums.get(name);
        return s == null ? 0 : s[0];
    }

    /** Examples {@code name} covers (0 if never added). */
    public long count(String name) {
        double[] s = sums.get(name);
        return s == null ? 0 : (long) s[1];
    }

    /** Sum over count, or NaN when no example was counted. */
    public double mean(String name) {
        long c = count(name);
        return c == 0 ? Double.NaN : sum(name) / c;
    }

    /** Every metric's mean, in name order of first addition. */
    public Map<String, Double> means() {
        Map<String, Double> out = new LinkedHashMap<>();
        for (String k : sums.keySet()) {
            out.put(k, mean(k));
        }
        return out;
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("Metrics{");
        sums.forEach((k, v) -> sb.append(sb.length() > 8 ? ", " : "").append(k).append('=').append(v[0] / v[1])
                .append(" (n=").append((long) v[1]).append(')'));
        return sb.append('}').toString();
    }
}
