package io.mn4j.gnn.nn;

import io.mn4j.gnn.random.CounterHash;

/**
 * Which dropout of a training run a mask belongs to: the run's seed, the step (a model counts its
 * training forward passes from 0) and the site (which dropout of the model: {@link GnnModel} uses
 * 2·i for the input of layer i and 2·i+1 for layer i's attention). With the ids of what it applies
 * to, nodes in the original graph's numbering or edges as (destination, source), it decides every
 * element of the mask, so any number of ranks drops what one process drops.
 */
public final class DropoutKey {
    private final long seed;
    private final long step;
    private final int site;
    private final long base;

    private DropoutKey(long seed, long step, int site) {
        this.seed = seed;
        this.step = step;
        this.site = site;
        this.base = CounterHash.key(seed, step, site);
    }

    /** The key of dropout {@code site} at training step {@code step} of the run seeded {@code seed}. */
    public static DropoutKey of(long seed, long step, int site) {
        return new DropoutKey(seed, step, site);
    }

    /** The run's seed. */
    public long seed() {
        return seed;
    }

    /** The training step (forward pass) the masks are drawn for. */
    public long step() {
        return step;
    }

    /** Which dropout of the model. */
    public int site() {
        return site;
    }

    /** The key of a node's mask row. */
    public long node(long id) {
        return CounterHash.combine(base, id);
    }

    /** The key of an edge's mask row (its heads, for attention). */
    public long edge(long dst, long src) {
        return CounterHash.combine(CounterHash.combine(base, dst), src);
    }

    @Override
    public String toString() {
        return "DropoutKey[seed " + seed + ", step " + step + ", site " + site + "]";
    }
}
