package io.mn4j.functions;

import io.mn4j.communicator.CommunicationException;
import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.ReduceOp;
import io.mn4j.communicator.SendHandle;
import io.mn4j.functions.autograd.Backward;
import io.mn4j.functions.autograd.CustomFunction;
import io.mn4j.functions.autograd.CustomFunction.Schedule;
import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.GradMode;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * Differentiable communication, in the style of ChainerMN's {@code chainermn.functions}: every
 * operation here is part of LibTorch's autograd graph, and its backward pass performs the matching
 * communication of gradients.
 *
 * <h2>Point to point</h2>
 * {@link #send} returns a <em>delegate</em> (a 0-dim tensor, value 0, that requires grad) and
 * {@link #recv} accepts one: backward of the received tensor first sends its gradient back, then
 * continues into the delegate's graph (which receives the gradient of the send). A rank whose
 * model part has no output calls {@code backward()} on its delegate; {@link #pseudoConnect} ties
 * a delegate into a value that is used. A send of a tensor that does not require grad still
 * takes part in backward, so the peer is never left waiting (ChainerMN's dummy-input rule).
 * Gradients of floating-point tensors travel back; integer and boolean tensors carry none (both
 * ends skip their backward exchange).
 *
 * <p>Sends are nonblocking (sending large tensors both ways at once cannot deadlock); the sent
 * tensor must not be modified in place until the send's backward has run or {@link #flush} was
 * called. Every gradient travels with a tag of its own derived from the forward tag and the
 * message's occurrence number (see {@link #send}), so backward passes may send and receive
 * gradients in any order. Forward tags must lie in [0, 65536) (fewer when the communicator's
 * {@link Communicator#maxTag() MPI_TAG_UB} is below 2^23-1: the limit is in the error message),
 * and fewer than 16384 messages of one (peer, tag) pair may await their backward at the same
 * time (fewer with a smaller MPI_TAG_UB: 64 with UCX's 2^23-1): the message that would share its
 * gradient tag with one still awaiting its backward throws an IllegalStateException on both
 * ranks, before it travels, rather than risk swapped gradients; raw {@link Communicator}
 * messages on the same communicator must use neither these tags nor any tag from 65536 (or the
 * smaller limit) up, where the gradients travel.
 *
 * <h2>Collectives</h2>
 * Backward rules (as in ChainerMN, sums not means): allgather ↔ reduce-scatter, alltoall ↔
 * alltoall, bcast ↔ gather and sum at the root, gather ↔ scatter, scatter ↔ gather, and
 * allreduce(sum or mean) ↔ allreduce(sum or mean). The backward passes of allgather, bcast and
 * allreduce are collectives too: every rank must reach them in the same order. By default each
 * of them first checks that with a tiny allreduce and throws on every rank if the ranks disagree
 * (system property {@code mn4j.functions.checkOrder=false} turns the check off). The backward
 * passes of gather, scatter and alltoall are point to point instead: every floating-point tensor
 * that went from one rank to another gets its gradient back on a tag of its own (see
 * {@link Tags}), so they may run in any order, and only the two ranks of such a pair take part.
 * Like the point-to-point functions, every collective's backward runs once per forward and not
 * under {@code create_graph} (see "One backward per forward"): a second backward pass through a
 * collective's output throws on the rank that runs it, before communicating.
 *
 * <p>Dtypes may differ between ranks: only floating-point (and complex) tensors carry gradients,
 * and every rank decides what it sends or receives in backward from what the forward exchanged
 * (a sender knows what it sent, a receiver what it got, every rank of an allgather or bcast every
 * dtype), so the ranks always agree without another message. allreduce needs the same dtype on
 * every rank and reports a mismatch on every rank. Two cases cannot work and throw in forward on
 * the rank concerned (its peers do not wait for it): a scatter root that sends floating-point
 * parts but keeps an integer part, and an alltoall rank that sends floating-point tensors to other
 * ranks but receives none: no output of theirs could start the backward pass in which those
 * tensors' gradients arrive. A bcast of an integer tensor refuses a delegate, as {@link #recv}
 * does.
 *
 * <h2>Unused outputs</h2>
 * An output that is not used gets a zero gradient, as long as backward reaches at least one output
 * of the call on that rank. LibTorch runs only the nodes that lead to the tensor {@code backward()}
 * starts from: a call none of whose outputs is used on some rank (a recv whose value is ignored,
 * a bcast root that uses its {@code x} instead of the broadcast value, a scatter, allreduce,
 * gather or recvAll result nobody uses) never runs its backward there, and its peers wait for its
 * gradients forever. Tie such an output in as a delegate, {@code pseudoConnect(unusedOutput,
 * aValueThatIsUsed)}: its backward then runs and sends zeros (ChainerMN has the same rule).
 *
 * <h2>One backward per forward</h2>
 * A point-to-point function's backward ({@link #send}, {@link #recv}, {@link #sendAll},
 * {@link #recvAll}) exchanges its gradient exactly once: the peer sends or waits for one gradient
 * per forward message, and only one side would know of a second pass. A second backward pass that
 * reaches the same call (a new loss computed from the same received tensor, or
 * {@code retain_graph=true} and {@code backward()} again) throws an {@link IllegalStateException}
 * on the rank where it happens, before communicating anything ("... its backward already ran; a
 * gradient travels back once per forward ..."), so no stray gradient is sent or awaited; the peers
 * are unaffected and stay in step. Run the forward again instead (sum the losses first to
 * backpropagate several at once). A collective's backward may run again through a graph kept with
 * {@code retain_graph}, as a LibTorch node's does, when every rank runs the same backward passes
 * (as for the first); after a pass without {@code retain_graph}, a second one throws for every
 * function, communicating or not.
 *
 * <p>Double backward ({@code create_graph=true}) is not supported: gradients that arrive from
 * other ranks carry no history, so every cross-rank term of the second derivative would be lost
 * without a word. The backward of every communicating function therefore throws an
 * {@link UnsupportedOperationException} under {@code create_graph}, before communicating; use the
 * same backward call on every rank (a rank that does not throw would wait for the one that did).
 *
 * <h2>Rules of use</h2>
 * Call {@code backward()} (not {@code torch.autograd.grad} restricted to some inputs, which could
 * skip a communication a peer waits for), once per forward and without {@code create_graph} (see
 * above). Outputs share memory with the received or given
 * tensors: do not modify them in place. All functions are safe to call inside a
 * {@code PointerScope}: what they return is attached to the caller's scope.
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
     * @param tag in [0, 65536) (see the class comment for smaller MPI_TAG_UB); the gradient
     *     travels back with a tag derived from this one and from the number of earlier sends with
     *     the same tag to the same rank
     * @return the delegate variable: a 0-dim tensor whose backward receives the gradient, once: a
     *     second backward pass through it throws before receiving (see "One backward per forward")
     */
    public static Tensor send(Tensor x, Communicator comm, int dst, int tag) {
        requireTensor("send", x);
        CommState state = CommState.of(comm);
        state.tags().checkUserTag("send", tag);
        checkPeer("send", comm, dst);
        state.reap();
        boolean carriesGradient = Gradients.differentiable(x);
        long[] shape = Tensors.shape(x);
        String name = "send(rank " + comm.rank() + " -> " + dst + ", tag " + tag + ")";
        GradientClaim claim = state.nextSendGradient(name, dst, tag);
        int gradTag = claim.tag();
        SendHandle forward = isendTracked(state, comm, x, dst, tag);
        Backward backward = claim.around(grads -> {
            forward.waitFor();
            if (!carriesGradient) {
                return Collections.singletonList(null);
            }
            Tensor g = comm.recv(dst, gradTag);
            return Collections.singletonList(Gradients.receivedGradient(g, shape, name));
        });
        return connectPointToPoint(name, Collections.singletonList(x), List.of(), backward,
                Schedule.NATURAL, comm).delegate();
    }

    /**
     * Receives a tensor from rank {@code src}; backward sends its gradient back to {@code src},
     * then continues into {@code delegateOrNull}'s graph. If the result is not used, backward
     * never reaches it: pseudoConnect it into a used value (see "Unused outputs" above) so that
     * a zero gradient goes back, or {@code src} waits for it forever.
     *
     * <p>The gradient goes back once: a second backward pass through the result throws before
     * sending (see "One backward per forward").
     *
     * @param delegateOrNull the delegate of an earlier part of this rank's model (typically what
     *     {@link #send} returned), or null
     * @throws IllegalArgumentException if {@code src} is this rank, or the delegate comes from a
     *     communication on a different communicator
     * @throws CommunicationException if the message was sent with {@link #sendAll}: the whole list
     *     is received and dropped first, so that the next message of the pair is read correctly
     */
    public static Tensor recv(Communicator comm, int src, int tag, Tensor delegateOrNull) {
        CommState state = CommState.of(comm);
        state.tags().checkUserTag("recv", tag);
        checkPeer("recv", comm, src);
        checkDelegate("recv", comm, delegateOrNull);
        state.reap();
        String name = "recv(rank " + comm.rank() + " <- " + src + ", tag " + tag + ")";
        // Before receiving, as the sender claims before sending: both ranks refuse the same message.
        GradientClaim claim = state.nextRecvGradient(name, src, tag);
        int gradTag = claim.tag();
        Tensor z = claim.receive(() -> {
            Tensor received = comm.recv(src, tag);
            refuseList(comm, src, tag, received);
            return received;
        });
        if (!Gradients.differentiable(z)) {
            claim.release(); // no gradient travels back
            if (delegateOrNull != null) {
                throw new IllegalArgumentException("recv from rank " + src + " (tag " + tag + "): received "
                        + Tensors.describe(z) + ", which carries no gradient, so it cannot carry the delegate's"
                        + " backward either; pseudoConnect the delegate to a floating-point value instead");
            }
            return z;
        }
        torch.ScalarType dtype = z.scalar_type();
        DelegateInfo delegate = DelegateInfo.of(delegateOrNull);
        Backward backward = claim.around(grads -> {
            Tensor g = grads.get(0);
            isendTracked(state, comm, Gradients.gradientOrMarker(g, dtype), src, gradTag);
            return delegate.gradients();
        });
        return connectPointToPoint(name, inputsOf(delegateOrNull), Collections.singletonList(z), backward,
                Schedule.EAGER, comm).outputs().get(0);
    }

    /** {@link #recv(Communicator, int, int, Tensor)} without a delegate. */
    public static Tensor recv(Communicator comm, int src, int tag) {
        return recv(comm, src, tag, null);
    }

    /**
     * Throws if {@code z} is the header of a {@link #sendAll} list, after receiving and dropping
     * the list's tensors: left queued, they would be taken for the next messages of the pair, and
     * a large one would keep the sender's {@link #flush} waiting. The sender's delegate must then
     * not be backpropagated (no gradient will come), as for any message received wrongly.
     */
    private static void refuseList(Communicator comm, int src, int tag, Tensor z) {
        long[] h = listHeader(z);
        if (h == null) {
            return;
        }
        try (PointerScope scope = new PointerScope()) {
            for (long i = 0; i < h[1]; i++) {
                comm.recv(src, tag);
            }
        }
        throw new CommunicationException("recv from rank " + src + " (tag " + tag + "): the message was sent with"
                + " sendAll() (a list of " + h[1] + " tensors); receive it with recvAll(). The list was received"
                + " and dropped; no gradient goes back for it");
    }

    /** The header {@code [LIST_MAGIC, n]} of a sendAll list, or null if {@code t} is not one. */
    private static long[] listHeader(Tensor t) {
        if (t.scalar_type().value != torch.ScalarType.Long.value || t.numel() != 2) {
            return null;
        }
        long[] h = Tensors.toLongArray(t);
        return h[0] == LIST_MAGIC && h[1] >= 0 ? h : null;
    }

    /**
     * Sends a list of tensors to {@code dst} in one logical message (ChainerMN's tuple send); the
     * peer receives it with {@link #recvAll}. Backward receives one gradient per floating-point
     * element.
     *
     * @return the delegate variable
     */
    public static Tensor sendAll(List<Tensor> xs, Communicator comm, int dst, int tag) {
        if (xs == null) {
            throw new IllegalArgumentException("sendAll: the list of tensors is null");
        }
        for (int i = 0; i < xs.size(); i++) {
            requireTensor("sendAll element " + i, xs.get(i));
        }
        CommState state = CommState.of(comm);
        state.tags().checkUserTag("sendAll", tag);
        checkPeer("sendAll", comm, dst);
        state.reap();
        int n = xs.size();
        String name = "sendAll(rank " + comm.rank() + " -> " + dst + ", tag " + tag + ", " + n + " tensors)";
        GradientClaim claim = state.nextSendGradient(name, dst, tag);
        int gradTag = claim.tag();
        List<SendHandle> handles = new ArrayList<>();
        handles.add(isendTracked(state, comm, Tensors.longs(LIST_MAGIC, n), dst, tag));
        boolean[] carries = new boolean[n];
        long[][] shapes = new long[n][];
        for (int i = 0; i < n; i++) {
            Tensor x = xs.get(i);
            carries[i] = Gradients.differentiable(x);
            shapes[i] = Tensors.shape(x);
            handles.add(isendTracked(state, comm, x, dst, tag));
        }
        Backward backward = claim.around(grads -> {
            handles.forEach(SendHandle::waitFor);
            List<Tensor> out = new ArrayList<>(Collections.nCopies(n, (Tensor) null));
            for (int i = 0; i < n; i++) {
                if (carries[i]) {
                    out.set(i, Gradients.receivedGradient(comm.recv(dst, gradTag), shapes[i], name + " element " + i));
                }
            }
            return out;
        });
        return connectPointToPoint(name, xs, List.of(), backward, Schedule.NATURAL, comm).delegate();
    }

    /**
     * Receives a list sent with {@link #sendAll}; backward sends the gradient of every
     * floating-point element back (zero for unused ones, as long as one is used or tied in, see
     * "Unused outputs" above), then continues into the delegate's graph.
     */
    public static List<Tensor> recvAll(Communicator comm, int src, int tag, Tensor delegateOrNull) {
        return recvAll(comm, src, tag, delegateOrNull, true);
    }

    /**
     * {@link #recvAll(Communicator, int, int, Tensor)} for a caller that carries the delegate on
     * to a later value itself ({@link MultiNodeChainList}): a list without a floating-point tensor
     * comes back as it is, without taking the delegate, instead of being refused.
     */
    static List<Tensor> recvAllOrLeaveDelegate(Communicator comm, int src, int tag, Tensor delegateOrNull) {
        return recvAll(comm, src, tag, delegateOrNull, false);
    }

    private static List<Tensor> recvAll(Communicator comm, int src, int tag, Tensor delegateOrNull,
            boolean refuseToLeaveDelegate) {
        CommState state = CommState.of(comm);
        state.tags().checkUserTag("recvAll", tag);
        checkPeer("recvAll", comm, src);
        checkDelegate("recvAll", comm, delegateOrNull);
        state.reap();
        GradientClaim claim = state.nextRecvGradient("recvAll(rank " + comm.rank() + " <- " + src + ", tag " + tag
                + ")", src, tag); // before receiving, as recv
        int gradTag = claim.tag();
        List<Tensor> zs = claim.receive(() -> receiveList(comm, src, tag));
        int n = zs.size();
        boolean anyDifferentiable = false;
        torch.ScalarType[] dtypes = new torch.ScalarType[n];
        for (int i = 0; i < n; i++) {
            dtypes[i] = Gradients.differentiable(zs.get(i)) ? zs.get(i).scalar_type() : null;
            anyDifferentiable |= dtypes[i] != null;
        }
        if (!anyDifferentiable) {
            claim.release(); // no gradient travels back
            if (delegateOrNull != null && refuseToLeaveDelegate) {
                throw new IllegalArgumentException("recvAll from rank " + src + " (tag " + tag + "): no received"
                        + " tensor carries a gradient, so none can carry the delegate's backward;"
                        + " pseudoConnect the delegate to a floating-point value instead");
            }
            return zs;
        }
        DelegateInfo delegate = DelegateInfo.of(delegateOrNull);
        String name = "recvAll(rank " + comm.rank() + " <- " + src + ", tag " + tag + ", " + n + " tensors)";
        Backward backward = claim.around(grads -> {
            for (int i = 0; i < n; i++) {
                if (dtypes[i] != null) {
                    Tensor g = grads.get(i);
                    isendTracked(state, comm, Gradients.gradientOrMarker(g, dtypes[i]), src, gradTag);
                }
            }
            return delegate.gradients();
        });
        return connectPointToPoint(name, inputsOf(delegateOrNull), zs, backward, Schedule.EAGER, comm).outputs();
    }

    /** The tensors of a {@link #sendAll} list, after its header. */
    private static List<Tensor> receiveList(Communicator comm, int src, int tag) {
        Tensor header = comm.recv(src, tag);
        long[] h = listHeader(header);
        if (h == null) {
            throw new CommunicationException("recvAll from rank " + src + " (tag " + tag + "): expected the list"
                    + " header of a sendAll but received " + Tensors.describe(header)
                    + "; was the message sent with send() instead of sendAll()?");
        }
        List<Tensor> zs = new ArrayList<>((int) h[1]);
        for (long i = 0; i < h[1]; i++) {
            zs.add(comm.recv(src, tag));
        }
        return zs;
    }

    /** {@link #recvAll(Communicator, int, int, Tensor)} without a delegate. */
    public static List<Tensor> recvAll(Communicator comm, int src, int tag) {
        return recvAll(comm, src, tag, null);
    }

    /**
     * Returns {@code actual} (same values, same memory) such that its backward also runs the
     * delegate's graph, with a zero gradient for the delegate. The delegate may be any tensor of a
     * graph, an output nobody uses for instance (see "Unused outputs"). With a null delegate, returns
     * {@code actual} itself.
     *
     * @throws IllegalArgumentException if {@code actual} is not floating point (it could not
     *     carry the delegate's backward)
     */
    public static Tensor pseudoConnect(Tensor delegate, Tensor actual) {
        requireTensor("pseudoConnect", actual);
        return pseudoConnect(delegate, Collections.singletonList(actual)).get(0);
    }

    /**
     * {@link #pseudoConnect(Tensor, Tensor)} for several values: every floating-point element is
     * connected; other elements are returned as they are. At least one must be floating point.
     */
    public static List<Tensor> pseudoConnect(Tensor delegate, List<Tensor> actuals) {
        if (actuals == null) {
            throw new IllegalArgumentException("pseudoConnect: the list of actual values is null");
        }
        for (int i = 0; i < actuals.size(); i++) {
            requireTensor("pseudoConnect element " + i, actuals.get(i));
        }
        if (delegate == null) {
            return new ArrayList<>(actuals);
        }
        if (actuals.stream().noneMatch(Gradients::differentiable)) {
            throw new IllegalArgumentException("pseudoConnect: none of the actual values (" + describe(actuals)
                    + ") is floating point, so none can carry the delegate's backward");
        }
        DelegateInfo d = DelegateInfo.of(delegate);
        int n = actuals.size();
        List<Tensor> inputs = new ArrayList<>(n + 1);
        inputs.add(delegate);
        inputs.addAll(actuals);
        Backward backward = grads -> {
            List<Tensor> out = new ArrayList<>(n + 1);
            out.add(d.gradients().get(0));
            out.addAll(grads);
            return out;
        };
        return CustomFunction.apply("pseudoConnect", inputs, actuals, backward, Schedule.NATURAL, null).outputs();
    }

    // ------------------------------------------------------------------------------------------
    // Collectives

    /**
     * Every rank gets every rank's {@code x} (shapes may differ), in rank order. Backward:
     * reduce-scatter by sum (each rank's {@code x} gets the sum of the gradients of its copies).
     */
    public static List<Tensor> allgather(Communicator comm, Tensor x) {
        requireTensor("allgather", x);
        CommState state = CommState.of(comm);
        state.reap();
        long id = state.nextCollective();
        List<Tensor> ys = comm.allgather(x.detach());
        if (ys.stream().noneMatch(Gradients::differentiable)) {
            return ys;
        }
        torch.ScalarType[] dtypes = dtypes(ys);
        long[] shape = Tensors.shape(x);
        String name = "allgather#" + id;
        Backward backward = grads -> {
            state.checkOrder(comm, "allgather", id);
            List<Tensor> parts = comm.alltoall(gradientsOrMarkers(grads, dtypes));
            return Collections.singletonList(sumReceived(parts, shape, name));
        };
        return connect(name, Collections.singletonList(x), ys, backward, Schedule.NATURAL, comm).outputs();
    }

    /**
     * Rank i sends {@code xs.get(j)} to rank j and gets the list of what every rank sent it, in
     * source order. {@code xs} must hold one tensor per rank (a wrong length is reported on every
     * rank). Backward: the gradient of every floating-point tensor goes back to its sender, point to
     * point (integer ones carry none), so dtypes may differ per pair; a rank that sends a
     * floating-point tensor to another rank must receive at least one (see the class comment).
     *
     * @throws IllegalArgumentException on a rank that sends floating-point tensors to other ranks
     *     but receives none: nothing could start its backward, where their gradients arrive
     */
    public static List<Tensor> alltoall(Communicator comm, List<Tensor> xs) {
        if (xs != null) {
            for (int i = 0; i < xs.size(); i++) {
                requireTensor("alltoall element " + i, xs.get(i));
            }
        }
        CommState state = CommState.of(comm);
        state.reap();
        long id = state.nextCollective();
        List<Tensor> ys = comm.alltoall(xs == null ? null : detached(xs));
        int me = comm.rank();
        int n = ys.size();
        // Gradient tags of every floating-point tensor that crossed between two ranks, counted on
        // both ends alike: the sender knows what it sent, the receiver what it got.
        boolean[] floatIn = new boolean[n];
        boolean[] floatOut = new boolean[n];
        int[] gradFrom = new int[n];
        int[] gradTo = new int[n];
        List<Integer> floatsOut = new ArrayList<>();
        boolean anyOut = false;
        for (int j = 0; j < n; j++) {
            floatIn[j] = Gradients.differentiable(xs.get(j));
            floatOut[j] = Gradients.differentiable(ys.get(j));
            anyOut |= floatOut[j];
            if (j != me && floatIn[j]) {
                gradFrom[j] = state.collectiveSendGradient(j);
                floatsOut.add(j);
            }
            if (j != me && floatOut[j]) {
                gradTo[j] = state.collectiveRecvGradient(j);
            }
        }
        if (!anyOut) {
            if (!floatsOut.isEmpty()) {
                throw new IllegalArgumentException("alltoall on rank " + me + ": this rank sends floating-point"
                        + " tensors to ranks " + floatsOut + " but receives only integer tensors (" + describe(ys)
                        + "), so none of its outputs can start the backward pass that receives their gradients;"
                        + " send it at least one floating-point tensor (an empty one will do) and use it,"
                        + " or send the floating-point tensors in a call of their own");
            }
            return ys;
        }
        torch.ScalarType[] dtypes = dtypes(ys);
        long[][] shapes = shapes(xs);
        String name = "alltoall#" + id;
        Backward backward = grads -> {
            for (int j = 0; j < n; j++) {
                if (j != me && floatOut[j]) {
                    Tensor g = grads.get(j);
                    isendTracked(state, comm, Gradients.gradientOrMarker(g, dtypes[j]), j, gradTo[j]);
                }
            }
            List<Tensor> out = new ArrayList<>(n);
            for (int j = 0; j < n; j++) {
                out.add(!floatIn[j] ? null : j == me ? grads.get(me)
                        : Gradients.receivedGradient(comm.recv(j, gradFrom[j]), shapes[j], name + " from rank " + j));
            }
            return out;
        };
        return connect(name, xs, ys, backward, floatsOut.isEmpty() ? Schedule.EAGER : Schedule.NATURAL,
                comm).outputs();
    }

    /**
     * Broadcasts the root's {@code x}. Non-root ranks pass a delegate or null. Every rank returns
     * the root's value (the root's output shares {@code x}'s memory). Backward: the gradients of
     * all ranks' outputs are gathered and summed into the root's {@code x}; a non-root delegate
     * gets a zero gradient.
     */
    public static Tensor bcast(Communicator comm, Tensor xOrNull, int root) {
        boolean isRoot = comm.rank() == root;
        if (isRoot) {
            requireTensor("bcast at the root", xOrNull);
        } else {
            checkDelegate("bcast", comm, xOrNull);
        }
        CommState state = CommState.of(comm);
        state.reap();
        long id = state.nextCollective();
        Tensor y = comm.bcast(isRoot ? xOrNull.detach() : null, root);
        if (!Gradients.differentiable(y)) {
            if (!isRoot && xOrNull != null) {
                throw new IllegalArgumentException("bcast from root " + root + " on rank " + comm.rank() + ": received "
                        + Tensors.describe(y) + ", which carries no gradient, so it cannot carry the delegate's backward"
                        + " either; pseudoConnect the delegate to a floating-point value instead");
            }
            return y;
        }
        torch.ScalarType dtype = y.scalar_type();
        long[] shape = Tensors.shape(y);
        DelegateInfo delegate = isRoot ? null : DelegateInfo.of(xOrNull);
        String name = "bcast#" + id;
        Backward backward = grads -> {
            state.checkOrder(comm, "bcast", id);
            Tensor g = grads.get(0);
            List<Tensor> all = comm.gather(Gradients.gradientOrMarker(g, dtype), root);
            return isRoot ? Collections.singletonList(sumReceived(all, shape, name)) : delegate.gradients();
        };
        List<Tensor> inputs = isRoot ? Collections.singletonList(xOrNull) : inputsOf(xOrNull);
        return connect(name, inputs, Collections.singletonList(y), backward, Schedule.NATURAL, comm)
                .outputs().get(0);
    }

    /**
     * Gathers every rank's {@code x} at the root. The root returns them in rank order; other
     * ranks return a list holding one delegate (call backward on it or chain it; a rank whose
     * {@code x} is not floating point gets a 0-dim tensor that needs no backward). Backward: the
     * root sends the gradient of every floating-point part back to its rank, point to point, so
     * dtypes may differ per rank.
     */
    public static List<Tensor> gather(Communicator comm, Tensor x, int root) {
        requireTensor("gather", x);
        boolean isRoot = comm.rank() == root;
        CommState state = CommState.of(comm);
        state.reap();
        long id = state.nextCollective();
        List<Tensor> ys = comm.gather(x.detach(), root);
        long[] shape = Tensors.shape(x);
        String name = "gather#" + id;
        if (!isRoot) {
            if (!Gradients.differentiable(x)) {
                return new ArrayList<>(List.of(torch.zeros(new long[0])));
            }
            int gradTag = state.collectiveSendGradient(root);
            Backward backward = grads -> Collections.singletonList(
                    Gradients.receivedGradient(comm.recv(root, gradTag), shape, name));
            return new ArrayList<>(List.of(connect(name, Collections.singletonList(x), ys, backward,
                    Schedule.NATURAL, comm).delegate()));
        }
        int n = ys.size();
        int[] gradTo = new int[n];
        boolean[] floats = new boolean[n];
        for (int j = 0; j < n; j++) {
            floats[j] = Gradients.differentiable(ys.get(j));
            if (floats[j] && j != root) {
                gradTo[j] = state.collectiveRecvGradient(j);
            }
        }
        if (ys.stream().noneMatch(Gradients::differentiable)) {
            return ys;
        }
        torch.ScalarType[] dtypes = dtypes(ys);
        Backward backward = grads -> {
            for (int j = 0; j < n; j++) {
                if (floats[j] && j != root) {
                    Tensor g = grads.get(j);
                    isendTracked(state, comm, Gradients.gradientOrMarker(g, dtypes[j]), j, gradTo[j]);
                }
            }
            return Collections.singletonList(floats[root] ? grads.get(root) : null);
        };
        return connect(name, Collections.singletonList(x), ys, backward, Schedule.EAGER, comm).outputs();
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
        boolean isRoot = comm.rank() == root;
        if (isRoot && xsOrNull != null) {
            for (int i = 0; i < xsOrNull.size(); i++) {
                requireTensor("scatter element " + i, xsOrNull.get(i));
            }
        }
        CommState state = CommState.of(comm);
        state.reap();
        long id = state.nextCollective();
        Tensor y = comm.scatter(isRoot && xsOrNull != null ? detached(xsOrNull) : null, root);
        String name = "scatter#" + id;
        if (!isRoot) {
            if (!Gradients.differentiable(y)) {
                return y;
            }
            int gradTag = state.collectiveRecvGradient(root);
            torch.ScalarType dtype = y.scalar_type();
            Backward backward = grads -> {
                Tensor g = grads.get(0);
                isendTracked(state, comm, Gradients.gradientOrMarker(g, dtype), root, gradTag);
                return List.of();
            };
            return connect(name, List.of(), Collections.singletonList(y), backward, Schedule.EAGER, comm)
                    .outputs().get(0);
        }
        int n = xsOrNull.size();
        int[] gradFrom = new int[n];
        boolean[] floats = new boolean[n];
        List<Integer> floatsOut = new ArrayList<>();
        for (int j = 0; j < n; j++) {
            floats[j] = Gradients.differentiable(xsOrNull.get(j));
            if (floats[j] && j != root) {
                gradFrom[j] = state.collectiveSendGradient(j);
                floatsOut.add(j);
            }
        }
        if (!floats[root]) {
            if (!floatsOut.isEmpty()) {
                throw new IllegalArgumentException("scatter at root rank " + root + ": the root's own part is "
                        + Tensors.describe(y) + " (integer) while it sends floating point tensors to ranks " + floatsOut
                        + ", so its output cannot start the backward pass that receives their gradients; give the"
                        + " root a floating-point part (an empty one will do) and use it, or scatter the"
                        + " floating-point parts in a call of their own");
            }
            return y;
        }
        long[][] shapes = shapes(xsOrNull);
        Backward backward = grads -> {
            List<Tensor> out = new ArrayList<>(n);
            for (int j = 0; j < n; j++) {
                out.add(!floats[j] ? null : j == root ? grads.get(0)
                        : Gradients.receivedGradient(comm.recv(j, gradFrom[j]), shapes[j], name + " from rank " + j));
            }
            return out;
        };
        return connect(name, xsOrNull, Collections.singletonList(y), backward, Schedule.NATURAL, comm)
                .outputs().get(0);
    }

    /**
     * Element-wise sum or mean over all ranks (same shape and dtype everywhere). Backward:
     * allreduce of the gradients with the same operation (the gradient of a sum is the sum of
     * the gradients; of a mean, their mean).
     *
     * @throws IllegalArgumentException for operations other than SUM and MEAN (not differentiable)
     */
    public static Tensor allreduce(Communicator comm, Tensor x, ReduceOp op) {
        requireTensor("allreduce", x);
        if (op != ReduceOp.SUM && op != ReduceOp.MEAN) {
            throw new IllegalArgumentException("allreduce: only SUM and MEAN are differentiable, got " + op
                    + "; use Communicator.allreduce for values that need no gradient");
        }
        CommState state = CommState.of(comm);
        state.reap();
        long id = state.nextCollective();
        Tensor y = comm.allreduce(x.detach(), op);
        if (!Gradients.differentiable(y)) {
            return y;
        }
        long[] shape = Tensors.shape(x);
        torch.ScalarType dtype = x.scalar_type();
        String name = "allreduce#" + id;
        Backward backward = grads -> {
            state.checkOrder(comm, "allreduce", id);
            Tensor g = grads.get(0);
            Tensor summed = comm.allreduce(g != null ? g : torch.zeros(shape, new org.bytedeco.pytorch.TensorOptions(dtype)), op);
            return Collections.singletonList(summed);
        };
        return connect(name, Collections.singletonList(x), Collections.singletonList(y), backward,
                Schedule.NATURAL, comm).outputs().get(0);
    }

    // ------------------------------------------------------------------------------------------
    // Housekeeping

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

    // ------------------------------------------------------------------------------------------
    // Internals

    /** First element of a sendAll header, so that a plain send is not taken for a list. */
    private static final long LIST_MAGIC = 0x6d6e346a4c495354L;

    /**
     * What backward needs of a delegate: its shape and dtype. Never the tensor itself: the
     * backward is held until the graph dies, and holding the graph would keep it alive forever.
     */
    private record DelegateInfo(boolean present, long[] shape, torch.ScalarType dtype) {
        static DelegateInfo of(Tensor d) {
            return d == null ? new DelegateInfo(false, null, null)
                    : new DelegateInfo(true, Tensors.shape(d), d.scalar_type());
        }

        List<Tensor> gradients() {
            return present ? Collections.singletonList(Gradients.delegateGradient(shape, dtype)) : List.of();
        }
    }

    /**
     * Why a communication's backward runs once per forward: the end of the message of the
     * exception a second backward pass throws (the peer sends or awaits exactly one gradient).
     */
    private static final String ONCE = "a gradient travels back once per forward; run the forward again"
            + " (retain_graph does not send or receive gradients again)";

    /**
     * {@link CustomFunction#apply} for a communicating function, which refuses {@code create_graph}
     * before communicating: the gradients it receives from other ranks have no history, so the
     * cross-rank terms of a double backward would be lost silently. A point-to-point function's
     * backward runs once per forward (a second backward pass throws before communicating: the peer
     * sends or awaits one gradient); a collective's may run again through a retained graph, since
     * every rank takes part in it alike.
     */
    private static CustomFunction.Result connect(String name, List<Tensor> inputs, List<Tensor> outputs,
            Backward backward, Schedule schedule, Communicator comm) {
        return connect(name, inputs, outputs, backward, schedule, comm, false);
    }

    /** {@link #connect} for send, recv, sendAll and recvAll: their backward runs once per forward. */
    private static CustomFunction.Result connectPointToPoint(String name, List<Tensor> inputs, List<Tensor> outputs,
            Backward backward, Schedule schedule, Communicator comm) {
        return connect(name, inputs, outputs, backward, schedule, comm, true);
    }

    private static CustomFunction.Result connect(String name, List<Tensor> inputs, List<Tensor> outputs,
            Backward backward, Schedule schedule, Communicator comm, boolean oncePerForward) {
        Backward firstOrderOnly = new Backward() {
            @Override
            public List<Tensor> apply(List<Tensor> grads) throws Exception {
                // Grad mode is on inside the backward pass only under create_graph.
                if (GradMode.is_enabled()) {
                    throw new UnsupportedOperationException(name + ": backward with create_graph=true (double"
                            + " backward) is not supported through communication: gradients received from other"
                            + " ranks carry no history, so the cross-rank terms would be lost. Call backward()"
                            + " without create_graph on every rank (this rank sent and received nothing here)");
                }
                return backward.apply(grads);
            }

            @Override
            public void released() {
                backward.released();
            }
        };
        return CustomFunction.apply(name, inputs, outputs, firstOrderOnly, schedule, comm, oncePerForward ? ONCE : null);
    }

    /** Starts sending {@code t} (the handle holds it while MPI reads it) and tracks the send. */
    private static SendHandle isendTracked(CommState state, Communicator comm, Tensor t, int dst, int tag) {
        SendHandle h = comm.isend(t, dst, tag);
        state.track(h);
        return h;
    }

    private static List<Tensor> inputsOf(Tensor delegateOrNull) {
        return delegateOrNull == null ? List.of() : Collections.singletonList(delegateOrNull);
    }

    private static void requireTensor(String op, Tensor x) {
        if (x == null || !x.defined()) {
            throw new IllegalArgumentException(op + ": the tensor is null or undefined");
        }
    }

    private static void checkPeer(String op, Communicator comm, int peer) {
        if (peer < 0 || peer >= comm.size()) {
            throw new IllegalArgumentException(op + " on rank " + comm.rank() + ": rank " + peer
                    + " is outside [0, " + comm.size() + ")");
        }
        if (peer == comm.rank()) {
            throw new IllegalArgumentException(op + " on rank " + comm.rank() + ": the peer must be another rank,"
                    + " not this one (" + peer + "); a " + op + " to oneself would wait forever in backward."
                    + " Use the tensor directly (MultiNodeChainList does this for rankIn/rankOut equal to the own rank)");
        }
    }

    private static void checkDelegate(String op, Communicator comm, Tensor delegate) {
        if (delegate == null) {
            return;
        }
        if (!delegate.defined()) {
            throw new IllegalArgumentException(op + ": the delegate is an undefined tensor");
        }
        Object owner = CustomFunction.ownerOf(delegate);
        if (owner instanceof Communicator other && other != comm) {
            throw new IllegalArgumentException(op + " on rank " + comm.rank() + ": the delegate variable comes from"
                    + " a communication on a different communicator (size " + other.size() + ", this one size "
                    + comm.size() + "); delegates order the backward of one communicator's messages, so pass a"
                    + " delegate from this communicator or pseudoConnect the other one to a value first");
        }
    }

    private static List<Tensor> detached(List<Tensor> xs) {
        List<Tensor> out = new ArrayList<>(xs.size());
        for (Tensor x : xs) {
            out.add(x == null ? null : x.detach());
        }
        return out;
    }

    private static torch.ScalarType[] dtypes(List<Tensor> ts) {
        torch.ScalarType[] out = new torch.ScalarType[ts.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = ts.get(i).scalar_type();
        }
        return out;
    }

    private static long[][] shapes(List<Tensor> ts) {
        long[][] out = new long[ts.size()][];
        for (int i = 0; i < out.length; i++) {
            out[i] = Tensors.shape(ts.get(i));
        }
        return out;
    }

    private static List<Tensor> gradientsOrMarkers(List<Tensor> grads, torch.ScalarType[] dtypes) {
        List<Tensor> out = new ArrayList<>(grads.size());
        for (int j = 0; j < grads.size(); j++) {
            Tensor g = grads.get(j);
            out.add(Gradients.gradientOrMarker(g, dtypes[j]));
        }
        return out;
    }

    /** Sum of received gradients (in place into the first, which is ours), skipping zero markers. */
    private static Tensor sumReceived(List<Tensor> parts, long[] shape, String context) {
        Tensor acc = null;
        for (int r = 0; r < parts.size(); r++) {
            Tensor g = Gradients.receivedGradient(parts.get(r), shape, context + " from rank " + r);
            if (g != null) {
                acc = acc == null ? g : acc.add_(g);
            }
        }
        return acc;
    }

    private static String describe(List<Tensor> ts) {
        List<String> out = new ArrayList<>();
        for (Tensor t : ts) {
            out.add(Tensors.describe(t));
        }
        return String.join(", ", out);
    }

    static String ranks(int[] r) {
        return r == null ? "none" : Arrays.toString(r);
    }
}
