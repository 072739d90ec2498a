package io.mn4j.gnn.random;

/**
 * Counter-based hashing: 64 random-looking bits that are a function of their inputs (a seed, a
 * step, a site, node ids, a counter), built on SplitMix64's finaliser. {@code combine(key, j)} for
 * j = 0, 1, 2, ... is SplitMix64's stream started at {@code key}, so a key doubles as the seed of a
 * fast stream of draws. Whoever computes a draw, in whatever order, gets the same bits.
 */
public final class CounterHash {
    /** SplitMix64's increment, 2^64 divided by the golden ratio. */
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;

    private CounterHash() {
    }

    /** SplitMix64's finaliser (Stafford's mix 13): a bijection of 64-bit words in which every output bit depends on every input bit. */
    public static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** The key of {@code x} under {@code key}, also draw {@code x} of the stream seeded by {@code key}. */
    public static long combine(long key, long x) {
        return mix(key + GOLDEN * (x + 1));
    }

    /** {@link #combine(long, long)} of each part in turn: the key of a tuple, e.g. (seed, step, site). */
    public static long key(long first, long... rest) {
        long k = mix(first);
        for (long x : rest) {
            k = combine(k, x);
        }
        return k;
    }
}
