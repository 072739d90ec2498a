package io.mn4j.functions;

import io.mn4j.communicator.CommunicationException;
import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.ReduceOp;
import java.util.List;
import org.bytedeco.pytorch.Tensor;

/**
 * Differentiable communication, in the style of ChainerMN's {@code chainermn.functions}: every
 * operation is part of LibTorch's autograd graph, and its backward pass performs the matching
 * communication of gradients. This class is the one place to find them; each family is
 * implemented in a file of its own, as in ChainerMN: {@code PointToPoint}, {@code Collectives},
 * {@code PseudoConnect}.
 *
 * <p>The rules of use (delegates, unused outputs, one backward per forward, no
 * {@code create_graph}, tags, dtypes) are in {@code functions/README.md}, "Rules of use". All
 * functions are safe to call inside a {@code PointerScope}: what they return is attached to the
 * caller's scope.
 */
public final class Functions {
    private Functions() {
    }

    // ------------------------------------------------------------------------------------------
    // Point to point

    /**
     * Sends {@code x} to rank {@code dst}; backward receives its gradient from {@code dst}.
     *
     * @param x any tensor (it need not require grad)
     * @param tag in [0, 65536) (fewer with a smaller MPI_TAG_UB: README, "Tags"); the gradient
     *     travels back with a tag derived from this one and from the number of earlier sends with
     *     the same tag to the same rank
     * @return the delegate variable: a 0-dim tensor whose backward receives the gradient, once: a
     *     second backward pass through it throws before receiving (README, "One backward per forward")
     */
    public static Tensor send(Tensor x, Communicator comm, int dst, int tag) {
        return PointToPoint.send(x, comm, dst, tag);
    }

    /**
     * Receives a tensor from rank {@code src}; backward sends its gradient back to {@code src},
     * then continues into {@code delegateOrNull}'s graph. If the result is not used, backward
     * never reaches it: pseudoConnect it into a used value (README, "Unused outputs") so that a
     * zero gradient goes back, or {@code src} waits for it forever. The gradient goes back once.
     *
     * @param delegateOrNull the delegate of an earlier part of this rank's model (typically what
     *     {@link #send} returned), or null
     * @throws IllegalArgumentException if {@code src} is this rank, or the delegate comes from a
     *     communication on a different communicator
     * @throws CommunicationException if the message was sent with {@link #sendAll}: the whole list
     *     is received and dropped first, so that the next message of the pair is read correctly
     */
    public static Tensor recv(Communicator comm, int src, int tag, Tensor delegateOrNull) {
        return PointToPoint.recv(comm, src, tag, delegateOrNull);
    }

    /** {@link #recv(Communicator, int, int, Tensor)} without a delegate. */
    public static Tensor recv(Communicator comm, int src, int tag) {
        return PointToPoint.recv(comm, src, tag, null);
    }

    /**
     * Sends a list of tensors to {@code dst} in one logical message (ChainerMN's tuple send); the
     * peer receives it with {@link #recvAll}. Backward receives one gradient per floating-point
     * element.
     *
     * @return the delegate variable
     */
    public static Tensor sendAll(List<Tensor> xs, Communicator comm, int dst, int tag) {
        return PointToPoint.sendAll(xs, comm, dst, tag);
    }

    /**
     * Receives a list sent with {@link #sendAll}; backward sends the gradient of every
     * floating-point element back (zero for unused ones, as long as one is used or tied in:
     * README, "Unused outputs"), then continues into the delegate's graph.
     */
    public static List<Tensor> recvAll(Communicator comm, int src, int tag, Tensor delegateOrNull) {
        return PointToPoint.recvAll(comm, src, tag, delegateOrNull);
    }

    /** {@link #recvAll(Communicator, int, int, Tensor)} without a delegate. */
    public static List<Tensor> recvAll(Communicator comm, int src, int tag) {
        return PointToPoint.recvAll(comm, src, tag, null);
    }

    // ------------------------------------------------------------------------------------------
    // Pseudo-connect

    /**
     * Returns {@code actual} (same values, same memory) such that its backward also runs the
     * delegate's graph, with a zero gradient for the delegate. The delegate may be any tensor of a
     * graph, an output nobody uses for instance (README, "Unused outputs"). With a null delegate,
     * returns {@code actual} itself.
     *
     * @throws IllegalArgumentException if {@code actual} is not floating point (it could not
     *     carry the delegate's backward)
     */
    public static Tensor pseudoConnect(Tensor delegate, Tensor actual) {
        return PseudoConnect.pseudoConnect(delegate, actual);
    }

    /**
     * {@link #pseudoConnect(Tensor, Tensor)} for several values: every floating-point element is
     * connected; other elements are returned as they are. At least one must be floating point.
     */
    public static List<Tensor> pseudoConnect(Tensor delegate, List<Tensor> actuals) {
        return PseudoConnect.pseudoConnect(delegate, actuals);
    }

    // ------------------------------------------------------------------------------------------
    // Collectives

    /**
     * Every rank gets every rank's {@code x} (shapes may differ), in rank order. Backward:
     * reduce-scatter by sum (each rank's {@code x} gets the sum of the gradients of its copies).
     */
    public static List<Tensor> allgather(Communicator comm, Tensor x) {
        return Collectives.allgather(comm, x);
    }

    /**
     * Rank i sends {@code xs.get(j)} to rank j and gets the list of what every rank sent it, in
     * source order. {@code xs} must hold one tensor per rank (a wrong length is reported on every
     * rank). Backward: the gradient of every floating-point tensor goes back to its sender, point to
     * point (integer ones carry none), so dtypes may differ per pair.
     *
     * @throws IllegalArgumentException on a rank that sends floating-point tensors to other ranks
     *     but receives none: nothing could start its backward, where their gradients arrive
     */
    public static List<Tensor> alltoall(Communicator comm, List<Tensor> xs) {
        return Collectives.alltoall(comm, xs);
    }

    /**
     * Broadcasts the root's {@code x}. Non-root ranks pass a delegate or null. Every rank returns
     * the root's value (the root's output shares {@code x}'s memory). Backward: the gradients of
     * all ranks' outputs are gathered and summed into the root's {@code x}; a non-root delegate
     * gets a zero gradient.
     */
    public static Tensor bcast(Communicator comm, Tensor xOrNull, int root) {
        return Collectives.bcast(comm, xOrNull, root);
    }

    /**
     * Gathers every rank's {@code x} at the root: the root's result holds them in rank order
     * ({@link Gathered#values()}), every other rank's a delegate ({@link Gathered#delegate()}:
     * call backward on it or chain it; a rank whose {@code x} is not floating point gets a 0-dim
     * tensor that needs no backward). Each accessor throws where the other applies. Backward: the
     * root sends the gradient of every floating-point part back to its rank, point to point, so
     * dtypes may differ per rank.
     */
    public static Gathered gather(Communicator comm, Tensor x, int root) {
        return Collectives.gather(comm, x, root);
    }

    /**
     * The root's {@code xs.get(r)} goes to rank r; every rank returns its part. Only the root's
     * list is read (one tensor per rank; a wrong length is reported on every rank). Backward: every
     * rank that received a floating-point part sends its gradient back to the root, point to point,
     * so dtypes may differ per rank.
     *
     * @throws IllegalArgumentException at the root, if it sends floating-point parts to other
     *     ranks but keeps an integer part itself: nothing could start its backward, where their
     *     gradients arrive
     */
    public static Tensor scatter(Communicator comm, List<Tensor> xsOrNull, int root) {
        return Collectives.scatter(comm, xsOrNull, root);
    }

    /**
     * Element-wise sum or mean over all ranks (same shape and dtype everywhere). Backward:
     * allreduce of the gradients with the same operation (the gradient of a sum is the sum of
     * the gradients; of a mean, their mean).
     *
     * @throws IllegalArgumentException for operations other than SUM and MEAN (not differentiable)
     */
    public static Tensor allreduce(Communicator comm, Tensor x, ReduceOp op) {
        return Collectives.allreduce(comm, x, op);
    }

    // ------------------------------------------------------------------------------------------
    // Sends in flight

    /**
     * Waits until every nonblocking send these functions started on {@code comm} (forward tensors
     * and backward gradients) has completed. Call it before modifying sent tensors in place when
     * their backward has not run, and before the program ends.
     */
    public static void flush(Communicator comm) {
        CommState.of(comm).flush();
    }

    /** Number of sends on {@code comm} still in flight (after checking which have completed). */
    public static int pendingSends(Communicator comm) {
        CommState state = CommState.of(comm);
        state.reap();
        return state.pendingSends();
    }
}
