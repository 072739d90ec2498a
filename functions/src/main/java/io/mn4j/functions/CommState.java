package io.mn4j.functions;

import io.mn4j.communicator.CommunicationException;
import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.ReduceOp;
import io.mn4j.communicator.SendHandle;
import java.util.ArrayDeque;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.GradMode;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/**
 * What the differentiable functions remember per communicator: the layout of its gradient tags
 * (from its MPI_TAG_UB), occurrence counters for them, the number of collectives called so far (to
 * check that every rank backpropagates them in the same order), and nonblocking sends in flight.
 */
final class CommState {
    private static final Map<Communicator, CommState> STATES = Collections.synchronizedMap(new WeakHashMap<>());
    /** Checking the order of collectives in backward costs one tiny allreduce per collective. */
    static final boolean CHECK_ORDER = Boolean.parseBoolean(System.getProperty("mn4j.functions.checkOrder", "true"));

    private final int rank;
    private final Tags tags;
    private final Map<Long, Integer> sends = new HashMap<>();
    private final Map<Long, Integer> recvs = new HashMap<>();
    private long collectives;
    /** Sends in flight; each handle holds its tensor until it completes. */
    private final Deque<SendHandle> pending = new ArrayDeque<>();

    private CommState(Communicator comm) {
        this.rank = comm.rank();
        this.tags = new Tags(comm.maxTag());
    }

    static CommState of(Communicator comm) {
        return STATES.computeIfAbsent(comm, CommState::new);
    }

    /** The gradient tags of this communicator. */
    Tags tags() {
        return tags;
    }

    private static long key(int peer, int tag) {
        return ((long) peer << 32) | (tag & 0xffffffffL);
    }

    /** Occurrence number of the next send to {@code peer} with {@code tag}. */
    synchronized int nextSend(int peer, int tag) {
        return sends.merge(key(peer, tag), 1, Integer::sum) - 1;
    }

    /** Occurrence number of the next receive from {@code peer} with {@code tag}. */
    synchronized int nextRecv(int peer, int tag) {
        return recvs.merge(key(peer, tag), 1, Integer::sum) - 1;
    }

    /** A point-to-point message's gradient tag: direction, peer, caller tag and occurrence modulo the tags' range. */
    private record GradientSlot(boolean sent, int peer, int tag, int slot) {
    }

    /** Gradient tags of point-to-point messages whose backward may still run. */
    private final Set<GradientSlot> gradientsInUse = ConcurrentHashMap.newKeySet();

    /** The gradient tag of the next send to {@code peer} with {@code tag}, held ({@link #claimGradient}). */
    GradientClaim nextSendGradient(String op, int peer, int tag) {
        return claimGradient(op, true, peer, tag, nextSend(peer, tag));
    }

    /** The gradient tag of the next receive from {@code peer} with {@code tag}, held ({@link #claimGradient}). */
    GradientClaim nextRecvGradient(String op, int peer, int tag) {
        return claimGradient(op, false, peer, tag, nextRecv(peer, tag));
    }

    /**
     * Holds the gradient tag of the {@code occurrence}-th message of ({@code peer}, {@code tag})
     * until the returned claim is released. Gradient tags repeat every {@link Tags#occurrences()}
     * messages of a pair: two messages sharing one, both awaiting their backward, could have
     * their gradients swapped without any error, so the second one throws here instead.
     */
    private GradientClaim claimGradient(String op, boolean sent, int peer, int tag, int occurrence) {
        int gradTag = tags.gradient(tag, occurrence);
        if (!GradMode.is_enabled()) {
            return new GradientClaim(gradTag, null); // no graph: no backward
        }
        int slots = tags.occurrences();
        GradientSlot slot = new GradientSlot(sent, peer, tag, occurrence & (slots - 1));
        if (!gradientsInUse.add(slot)) {
            throw new IllegalStateException(op + ": message " + occurrence + " of this pair would carry its gradient"
                    + " on the tag of an earlier message of the pair whose backward has not run yet (gradient tags"
                    + " repeat every " + slots + " messages of a (peer, tag) pair, as this communicator's MPI_TAG_UB"
                    + " allows): run the backward of earlier messages, or free their graphs, first, or spread the"
                    + " messages over more tags");
        }
        return new GradientClaim(gradTag, () -> gradientsInUse.remove(slot));
    }

    /** Key of the counters of collective messages (no caller tag is negative). */
    private static final int COLLECTIVE = -1;

    /**
     * Tag of the gradient of the floating-point tensor this rank sends {@code peer} in a gather,
     * scatter or alltoall (the gradient comes back from {@code peer}).
     */
    synchronized int collectiveSendGradient(int peer) {
        return tags.collectiveGradient(nextSend(peer, COLLECTIVE));
    }

    /** Tag of the gradient of the floating-point tensor this rank received from {@code peer} in one. */
    synchronized int collectiveRecvGradient(int peer) {
        return tags.collectiveGradient(nextRecv(peer, COLLECTIVE));
    }

    /** Number of this collective among the differentiable collectives on this communicator. */
    synchronized long nextCollective() {
        return ++collectives;
    }

    /** Starts sending {@code t} (the handle holds it while MPI reads it) and keeps the send until it completes. */
    SendHandle isend(Communicator comm, Tensor t, int dst, int tag) {
        SendHandle h = comm.isend(t, dst, tag);
        synchronized (this) {
            pending.add(h);
        }
        return h;
    }

    /** Forgets the sends that have completed (testing them also moves MPI along). */
    synchronized void reap() {
        pending.removeIf(SendHandle::test);
    }

    /** Waits for every send still in flight. */
    void flush() {
        while (true) {
            SendHandle h;
            synchronized (this) {
                h = pending.poll();
            }
            if (h == null) {
                return;
            }
            h.waitFor();
        }
    }

    synchronized int pendingSends() {
        return pending.size();
    }

    /**
     * Throws the same explanation on every rank if the ranks are about to backpropagate different
     * collectives, which would pair wrong data or hang: one tiny allreduce, in which the collective's
     * number travels as the shape of an empty tensor and the communicator's shape check compares it.
     */
    void checkOrder(Communicator comm, String op, long id) {
        if (!CHECK_ORDER) {
            return;
        }
        try (PointerScope scope = new PointerScope()) {
            comm.allreduce(torch.empty(new long[] {0, id}, new TensorOptions(torch.ScalarType.Long), null),
                    ReduceOp.MAX);
        } catch (CommunicationException e) {
            throw new CommunicationException(op + " backward on rank " + rank + ": the ranks reached the backward"
                    + " of different collectives (this rank: collective #" + id + ", " + op + "; the second"
                    + " dimension below is each rank's collective number). Collectives must be backpropagated"
                    + " in the same order on every rank: give every rank the same graph structure or chain the"
                    + " collectives with delegates. (" + e.getMessage() + ")", e);
        }
    }
}
