package io.mn4j.gnn.shard;

import io.mn4j.communicator.Communicator;
import java.util.ArrayList;
import java.util.List;

/**
 * The epochs of PIPELINED mode: for each training aggregation of an epoch, in call order, the
 * exchanges of its rows and of their gradients ({@link StaleExchange}), and the rules that keep
 * every rank's k-th aggregation paired with its partners' k-th of earlier epochs. An epoch is
 * one forward and its backward, started by {@link #nextEpoch}, and every epoch makes the same
 * aggregations as the first; anything else throws, saying what happened, before it would pair
 * blocks wrongly.
 */
final class Pipeline implements AutoCloseable {
    /** Aggregation k sends its rows under this tag plus 2k, their gradients plus 2k+1. */
    private static final int TAG_BASE = 100;

    private final Communicator comm;
    private final double smoothing;
    private final int staleness;
    private final List<Slot> slots = new ArrayList<>();
    /** The next training aggregation's index in {@link #slots}; -1 until {@link #nextEpoch}. */
    private int nextSlot = -1;
    /** {@link #nextEpoch} calls so far. */
    private int epochs;
    /** Whether a backward has run since the last {@link #nextEpoch}. */
    private boolean backwardRan;
    private boolean closed;

    /** The exchanges of one training aggregation. */
    record Slot(int index, StaleExchange rows, StaleExchange gradients) {
    }

    Pipeline(Communicator comm, double smoothing, int staleness) {
        this.comm = comm;
        this.smoothing = smoothing;
        this.staleness = staleness;
    }

    /** The running-average weight γ of the stale blocks (0: none). */
    double smoothing() {
        return smoothing;
    }

    /** The most epochs old the blocks a pass reads may be. */
    int staleness() {
        return staleness;
    }

    /** See {@link GraphShardManager#nextEpoch()}. */
    void nextEpoch() {
        requireOpen();
        if (epochs > 0 && nextSlot != slots.size()) {
            throw new IllegalStateException(where() + "epoch " + epochs + " of the pipeline made " + nextSlot
                    + " pipelined training aggregations where the first had " + slots.size()
                    + ": in PIPELINED mode every epoch makes the same aggregations (mode(...) starts a new pipeline)");
        }
        nextSlot = 0;
        epochs++;
        backwardRan = false;
    }

    /** Throws unless {@link #nextEpoch} has started an epoch (and the pipeline is open). */
    void requireEpoch() {
        requireOpen();
        if (nextSlot < 0) {
            throw new IllegalStateException(where() + "PIPELINED aggregation in a training pass before nextEpoch(): "
                    + "call graph.nextEpoch() at the start of every training epoch (FullGraphTrainer does)");
        }
    }

    private void requireOpen() {
        if (closed) {
            throw new IllegalStateException(where() + "the pipeline was ended (mode(), smoothing(), staleness() or close())");
        }
    }

    /**
     * The exchanges of this epoch's next training forward (new ones in the first epoch).
     *
     * @throws IllegalStateException before the first {@link #nextEpoch}, after {@link #close}, for
     *     a forward after a backward of the same epoch, for more aggregations than the first epoch
     *     made, and for a forward whose last forward had no backward
     */
    Slot nextForward() {
        requireEpoch();
        if (backwardRan) {
            throw new IllegalStateException(where() + "a pipelined training forward after a backward in the same epoch: in "
                    + "PIPELINED mode an epoch is one forward and its backward; call graph.nextEpoch() at the start of every epoch");
        }
        if (nextSlot == slots.size()) {
            if (epochs > 1) {
                throw new IllegalStateException(where() + "pipelined training aggregation " + nextSlot + " in epoch " + epochs
                        + " of the pipeline, whose first epoch had " + slots.size()
                        + ": in PIPELINED mode every epoch makes the same aggregations, and graph.nextEpoch() starts each");
            }
            int tag = TAG_BASE + 2 * nextSlot;
            String what = where() + "pipelined aggregation " + nextSlot;
            slots.add(new Slot(nextSlot, new StaleExchange(comm, tag, smoothing, staleness, what + "'s rows"),
                    new StaleExchange(comm, tag + 1, smoothing, staleness, what + "'s gradients")));
        }
        Slot s = slots.get(nextSlot++);
        if (s.gradients.uses() != s.rows.uses()) {
            throw new IllegalStateException(where() + "pipelined aggregation " + s.index + " runs its forward again before the "
                    + "backward of its last one: in PIPELINED mode every training forward needs its backward, once, before the next epoch");
        }
        return s;
    }

    /** Notes that a backward runs in this epoch: no forward may follow it before {@link #nextEpoch}. */
    void backward() {
        backwardRan = true;
    }

    /** Lets every transfer in flight advance, and completed sends release their blocks. */
    void settle() {
        for (Slot s : slots) {
            s.rows.settle();
            s.gradients.settle();
        }
    }

    private String where() {
        return "rank " + comm.rank() + ": ";
    }

    /**
     * Completes what is in flight with the partners and releases every block. Collective. The
     * pipeline cannot be used afterwards.
     */
    @Override
    public void close() {
        closed = true;
        for (Slot s : slots) {
            s.rows.close();
            s.gradients.close();
        }
        slots.clear();
    }
}
