package io.mn4j.examples.support;

import io.mn4j.checkpoint.CheckpointReader;
import io.mn4j.checkpoint.CheckpointWriter;
import io.mn4j.checkpoint.Checkpointer;
import io.mn4j.iterators.BatchIterator;
import io.mn4j.iterators.Metrics;
import io.mn4j.iterators.MultiNodeIterator;
import io.mn4j.iterators.SerialIterator;
import io.mn4j.communicator.Communicator;
import java.io.PrintStream;
import java.util.Map;
import java.util.function.Consumer;
import java.util.List;
import java.util.Locale;

/**
 * Checkpoints of the Fashion-MNIST training loop: the loop's own position (epoch, iteration, the
 * running epoch's metrics, the epochs done), the iterator's state and the program's model and
 * optimizer (through {@code model}). When to save follows {@code --checkpoint-every}.
 */
public final class TrainingCheckpoints {
    /** The loop's position: the epoch under way, iterations done in all and in it, its metrics so far, the epochs done. */
    public record LoopState(int epoch, long done, long inEpoch, Metrics train, double seconds, List<EpochReport> reports) {
    }

    /** What the program saves and restores of its own (model, optimizer). */
    public interface ModelState {
        void save(CheckpointWriter w);

        void restore(CheckpointReader r);
    }

    private final Checkpointer checkpointer;
    private final CheckpointOptions.Interval every;
    private final boolean resume;
    private final ModelState model;
    private final PrintStream talk;

    /** @param talk where rank 0 reports saves and the resume (null on other ranks) */
    public TrainingCheckpoints(Checkpointer checkpointer, CheckpointOptions opts, ModelState model, PrintStream talk) {
        this.checkpointer = checkpointer;
        this.every = opts.interval();
        this.resume = opts.resume;
        this.model = model;
        this.talk = talk;
    }

    /**
     * Checkpoints of a program's loop as {@code opts} ask, or null without --checkpoint-dir. Collective.
     *
     * @param talk where rank 0 reports saves and the resume (null on other ranks)
     */
    public static TrainingCheckpoints open(Communicator comm, CheckpointOptions opts, Map<String, String> identity,
            Consumer<CheckpointWriter> save, Consumer<CheckpointReader> restore, PrintStream talk) {
        if (!opts.enabled()) {
            return null;
        }
        return new TrainingCheckpoints(opts.open(comm, identity), opts, new ModelState() {
            @Override
            public void save(CheckpointWriter w) {
                save.accept(w);
            }

            @Override
            public void restore(CheckpointReader r) {
                restore.accept(r);
            }
        }, talk);
    }

    /** Whether a checkpoint is due after iteration {@code done}, which did not end its epoch. */
    boolean dueMidEpoch(long done) {
        return every.iterations() && done % every.count() == 0;
    }

    /**
     * Whether a checkpoint is due after epoch {@code epoch}, whose last iteration was {@code done}
     * (an iteration interval that ends with an epoch is saved after the epoch's evaluation).
     */
    boolean dueAtEpochEnd(int epoch, long done) {
        return every.iterations() ? done % every.count() == 0 : epoch % every.count() == 0;
    }

    /** Saves the loop's state, the iterator's and the model's. Collective. */
    void save(LoopState s, BatchIterator it) {
        Checkpointer.Saved saved = checkpointer.save(s.done(), w -> {
            w.value("loop", s);
            w.value("iterator", iteratorState(it));
            model.save(w);
        });
        if (talk != null) {
            talk.printf(Locale.ROOT, "checkpoint at iteration %d (epoch %d): %s on rank 0, %s in all, %.3f s%n", s.done(),
                    s.epoch() - (s.inEpoch() == 0 ? 1 : 0), Memory.mib(saved.bytesThisRank()), Memory.mib(saved.bytesAllRanks()),
                    saved.seconds());
        }
    }

    /**
     * With --resume, restores the newest complete checkpoint and returns the loop's state; null to
     * start afresh (without --resume the directory must hold no checkpoints). Collective.
     */
    LoopState restore(BatchIterator it) {
        if (!resume) {
            checkpointer.requireNoCheckpoints();
            return null;
        }
        try (CheckpointReader r = checkpointer.restore()) {
            if (talk != null) {
                talk.println(checkpointer.note());
            }
            if (r == null) {
                return null;
            }
            model.restore(r);
            SerialIterator.State s = r.value("iterator", SerialIterator.State.class);
            if (it instanceof MultiNodeIterator m) {
                m.restoreMasterState(s);
            } else {
                ((SerialIterator) it).restore(s);
            }
            return r.value("loop", LoopState.class);
        }
    }

    private static SerialIterator.State iteratorState(BatchIterator it) {
        if (it instanceof MultiNodeIterator m) {
            return m.masterState();
        }
        if (it instanceof SerialIterator s) {
            return s.state();
        }
        throw new UnsupportedOperationException("cannot save the state of a " + it.getClass().getSimpleName());
    }
}
