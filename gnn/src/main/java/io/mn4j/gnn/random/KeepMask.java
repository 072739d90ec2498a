package io.mn4j.gnn.random;

/**
 * The elements of an inverted-dropout mask: 0 with probability {@code p}, {@code 1/(1-p)}
 * otherwise, element {@code j} of an item (a node's features, an edge's attention heads) decided by
 * the item's key alone ({@link CounterHash}): draw j takes 32 bits of draw {@code j/2} of the
 * item's stream, and keeps when their low 24 bits are below {@code (1-p)·2^24} (keep
 * probabilities are resolved to 2^-24).
 */
public final class KeepMask {
    private static final int BITS = 24;

    private final double p;
    private final int threshold;
    private final double scale;

    /** @throws IllegalArgumentException unless 0 ≤ p < 1 */
    public KeepMask(double p) {
        if (!(p >= 0 && p < 1)) {
            throw new IllegalArgumentException("a keep mask needs a dropout probability in [0, 1), got " + p);
        }
        this.p = p;
        this.threshold = (int) Math.round((1 - p) * (1 << BITS));
        this.scale = 1 / (1 - p);
    }

    /** The dropout probability. */
    public double p() {
        return p;
    }

    /** Whether element {@code j} of the item with key {@code item} is kept. */
    public boolean kept(long item, long j) {
        long bits = CounterHash.combine(item, j >>> 1);
        return keep((int) ((j & 1) == 0 ? bits : bits >>> 32)) == 1;
    }

    /** Element {@code j} of the item's mask: 0, or {@code 1/(1-p)}. */
    public double value(long item, long j) {
        return kept(item, j) ? scale : 0;
    }

    /** Elements {@code 0..count-1} of the item's mask into {@code out[from..from+count)}. */
    public void fill(long item, float[] out, int from, int count) {
        float k = (float) scale;
        int j = 0;
        for (long d = 0; j + 1 < count; d++, j += 2) {
            long bits = CounterHash.combine(item, d);
            out[from + j] = k * keep((int) bits);
            out[from + j + 1] = k * keep((int) (bits >>> 32));
        }
        if (j < count) {
            out[from + j] = k * keep((int) CounterHash.combine(item, j >>> 1));
        }
    }

    /** {@link #fill(long, float[], int, int)} in float64. */
    public void fill(long item, double[] out, int from, int count) {
        int j = 0;
        for (long d = 0; j + 1 < count; d++, j += 2) {
            long bits = CounterHash.combine(item, d);
            out[from + j] = scale * keep((int) bits);
            out[from + j + 1] = scale * keep((int) (bits >>> 32));
        }
        if (j < count) {
            out[from + j] = scale * keep((int) CounterHash.combine(item, j >>> 1));
        }
    }

    /**
     * 1 if the low 24 bits are below the threshold, else 0, without a branch: the outcome is
     * random, so a branch would be mispredicted half the time (4x slower).
     */
    private int keep(int bits) {
        return ((bits & 0xFFFFFF) - threshold) >>> 31;
    }
}
