package io.mn4j.iterators;

import io.mn4j.communicator.Communicator;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import org.bytedeco.pytorch.Tensor;

/**
 * ChainerMN's {@code create_multi_node_iterator}: the master rank iterates over its data set and
 * broadcasts every batch to all ranks of the communicator, so that the ranks holding different
 * parts of one model see the same examples in the same order. The epoch state ({@link #epoch()},
 * {@link #isNewEpoch()}, ...) travels with each batch and is the same on every rank. Unlike
 * ChainerMN, which casts to float32, every field keeps its dtype and shape.
 *
 * <p>Construction, {@link #next()} and {@link #reset()} are collective: every rank of the
 * communicator calls them the same number of times. If the master's iterator fails (while
 * describing itself at construction, producing a batch or resetting) or has finished, every rank
 * throws (the master its own exception, the others a {@link DatasetException} quoting it, or
 * {@link NoSuchElementException}); no rank is left waiting for a message that will not come.
 */
public final class MultiNodeIterator implements BatchIterator {
    private final Communicator comm;
    private final int master;
    private final BatchIterator actual;
    private final int batchSize;
    private final long datasetSize;
    private final boolean repeat;
    private State state;

    /**
     * Wraps {@code actual}, which only the master reads: other ranks may pass null (or an iterator
     * of their own, which is ignored).
     */
    public MultiNodeIterator(BatchIterator actual, Communicator comm, int master) {
        this(actual, comm, master, actual == null ? "the master rank " + master + " passed a null iterator" : null);
    }

    private MultiNodeIterator(BatchIterator actual, Communicator comm, int master, String masterProblem) {
        if (master < 0 || master >= comm.size()) {
            throw new IllegalArgumentException("master rank " + master + " is outside [0, " + comm.size() + ")");
        }
        this.comm = comm;
        this.master = master;
        boolean isMaster = comm.rank() == master;
        this.actual = isMaster ? actual : null;
        Info info = null;
        RuntimeException failure = null;
        if (isMaster) {
            if (masterProblem != null) {
                info = new Info(masterProblem, 0, 0, false, null);
            } else {
                // The other ranks wait in bcastObj: a failure here must reach them too.
                try {
                    info = new Info(null, actual.batchSize(), actual.datasetSize(), actual.repeat(), State.of(actual));
                } catch (RuntimeException e) {
                    failure = e;
                    info = new Info("the master rank " + master + " failed to describe its iterator: " + e, 0, 0,
                            false, null);
                }
            }
        }
        info = comm.bcastObj(info, master);
        if (failure != null) {
            throw failure;
        }
        if (info.error != null) {
            throw new DatasetException("MultiNodeIterator: " + info.error);
        }
        this.batchSize = info.batchSize;
        this.datasetSize = info.datasetSize;
        this.repeat = info.repeat;
        this.state = info.state;
    }

    /** {@link #MultiNodeIterator(BatchIterator, Communicator, int)} with rank 0 as the master. */
    public static MultiNodeIterator create(BatchIterator actual, Communicator comm) {
        return new MultiNodeIterator(actual, comm, 0);
    }

    /**
     * A multi-node iterator whose master walks {@code datasetAtMaster} with a
     * {@link SerialIterator} of these settings; other ranks may pass null. A problem at the master
     * (no data set, a batch size that does not fit) is thrown on every rank.
     */
    public static MultiNodeIterator over(Dataset<?> datasetAtMaster, int batchSize, boolean repeat, boolean shuffle,
            long seed, Communicator comm, int master) {
        SerialIterator it = null;
        String problem = null;
        if (comm.rank() == master) {
            try {
                it = new SerialIterator(datasetAtMaster, batchSize, repeat, shuffle, seed);
            } catch (DatasetException e) {
                problem = "at the master rank " + master + ": " + e.getMessage();
            }
        }
        return new MultiNodeIterator(it, comm, master, problem);
    }

    @Override
    public boolean hasNext() {
        return state.hasNext;
    }

    @Override
    public Batch next() {
        Message msg;
        Batch batch = null;
        RuntimeException failure = null;
        if (comm.rank() == master) {
            if (!actual.hasNext()) {
                msg = new Message(Kind.END, null, state, 0, 0);
            } else {
                try {
                    batch = actual.next();
                    msg = new Message(Kind.BATCH, null, State.of(actual), batch.size(), batch.numFields());
                } catch (RuntimeException e) {
                    failure = e;
                    msg = new Message(Kind.FAILED, String.valueOf(e), state, 0, 0);
                }
            }
        } else {
            msg = null;
        }
        msg = comm.bcastObj(msg, master);
        switch (msg.kind) {
            case END:
                throw new NoSuchElementException("MultiNodeIterator: the master's iterator has finished its epoch");
            case FAILED:
                if (failure != null) {
                    throw failure;
                }
                throw new DatasetException("MultiNodeIterator: the master rank " + master
                        + " failed to produce batch " + (state.iteration + 1) + ": " + msg.error);
            default:
                break;
        }
        List<Tensor> fields = new ArrayList<>(msg.numFields);
        for (int f = 0; f < msg.numFields; f++) {
            fields.add(comm.bcast(batch == null ? null : batch.field(f), master));
        }
        state = msg.state;
        return batch != null ? batch : new Batch(msg.size, fields);
    }

    /**
     * Resets the master's iterator and shares its new state. If that fails, the master throws its
     * exception and the other ranks a {@link DatasetException} quoting it; the state stays as it
     * was on every rank.
     */
    @Override
    public void reset() {
        onMaster(() -> actual.reset(), "reset its iterator");
    }

    /**
     * Runs {@code action} on the master and shares the iterator's new state; if it fails, the
     * master throws its exception and the other ranks a {@link DatasetException} quoting it, and
     * the state stays as it was on every rank.
     */
    private void onMaster(Runnable action, String what) {
        Message msg = null;
        RuntimeException failure = null;
        if (comm.rank() == master) {
            // The other ranks wait in bcastObj: a failure here must reach them too.
            try {
                action.run();
                msg = new Message(Kind.RESET, null, State.of(actual), 0, 0);
            } catch (RuntimeException e) {
                failure = e;
                msg = new Message(Kind.FAILED, String.valueOf(e), state, 0, 0);
            }
        }
        msg = comm.bcastObj(msg, master);
        if (failure != null) {
            throw failure;
        }
        if (msg.kind == Kind.FAILED) {
            throw new DatasetException("MultiNodeIterator: the master rank " + master + " failed to " + what + ": " + msg.error);
        }
        state = msg.state;
    }

    /**
     * The master's iterator state for a checkpoint (null on the other ranks, which hold none).
     *
     * @throws UnsupportedOperationException on the master if its iterator is not a {@link SerialIterator}
     */
    public SerialIterator.State masterState() {
        if (comm.rank() != master) {
            return null;
        }
        if (!(actual instanceof SerialIterator s)) {
            throw new UnsupportedOperationException("only a SerialIterator's state can be saved, the master has a "
                    + actual.getClass().getSimpleName());
        }
        return s.state();
    }

    /**
     * Continues from a state {@link #masterState()} gave (the master's; other ranks may pass null).
     * Collective: the master restores its iterator and shares its epoch state; if that fails, every
     * rank throws as in {@link #reset()}.
     */
    public void restoreMasterState(SerialIterator.State saved) {
        onMaster(() -> {
            if (!(actual instanceof SerialIterator s)) {
                throw new UnsupportedOperationException("only a SerialIterator's state can be restored");
            }
            if (saved == null) {
                throw new DatasetException("no saved iterator state to restore at the master rank " + master);
            }
            s.restore(saved);
        }, "restore its iterator");
    }

    /** The rank that reads the data. */
    public int master() {
        return master;
    }

    @Override
    public int batchSize() {
        return batchSize;
    }

    @Override
    public long datasetSize() {
        return datasetSize;
    }

    @Override
    public boolean repeat() {
        return repeat;
    }

    @Override
    public long epoch() {
        return state.epoch;
    }

    @Override
    public double epochDetail() {
        return state.epochDetail;
    }

    @Override
    public double previousEpochDetail() {
        return state.previousEpochDetail;
    }

    @Override
    public boolean isNewEpoch() {
        return state.newEpoch;
    }

    @Override
    public long iteration() {
        return state.iteration;
    }

    private enum Kind { BATCH, END, FAILED, RESET }

    /** The master's epoch state after a batch. */
    private record State(long epoch, double epochDetail, double previousEpochDetail, boolean newEpoch,
            long iteration, boolean hasNext) implements Serializable {
        static State of(BatchIterator it) {
            return new State(it.epoch(), it.epochDetail(), it.previousEpochDetail(), it.isNewEpoch(),
                    it.iteration(), it.hasNext());
        }
    }

    private record Info(String error, int batchSize, long datasetSize, boolean repeat, State state)
            implements Serializable {
    }

    private record Message(Kind kind, String error, State state, long size, int numFields) implements Serializable {
    }
}
