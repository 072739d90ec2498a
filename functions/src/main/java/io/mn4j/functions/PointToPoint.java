package io.mn4j.functions;

import static io.mn4j.functions.ArgumentChecks.checkDelegate;
import static io.mn4j.functions.ArgumentChecks.checkPeer;
import static io.mn4j.functions.ArgumentChecks.requireTensor;
import static io.mn4j.functions.ArgumentChecks.requireTensors;
import static io.mn4j.functions.CommunicatingFunction.connectPointToPoint;
import static io.mn4j.functions.CommunicatingFunction.inputsOf;

import io.mn4j.communicator.CommunicationException;
import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.SendHandle;
import io.mn4j.functions.autograd.Backward;
import io.mn4j.functions.autograd.CustomFunction.Schedule;
import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * send, recv, sendAll and recvAll with delegates (ChainerMN's
 * {@code point_to_point_communication.py}); the contract is on {@link Functions}. Every gradient
 * travels back on a tag of its own, held by a {@link GradientClaim} from the forward until the
 * backward has run.
 */
final class PointToPoint {
    /** First element of a sendAll header, so that a plain send is not taken for a list. */
    private static final long LIST_MAGIC = 0x6d6e346a4c495354L;

    private PointToPoint() {
    }

    static Tensor send(Tensor x, Communicator comm, int dst, int tag) {
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
        SendHandle forward = state.isend(comm, x, dst, tag);
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

    static Tensor recv(Communicator comm, int src, int tag, Tensor delegateOrNull) {
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
        DelegateGradient delegate = DelegateGradient.of(delegateOrNull);
        Backward backward = claim.around(grads -> {
            Tensor g = grads.get(0);
            state.isend(comm, Gradients.gradientOrMarker(g, dtype), src, gradTag);
            return delegate.gradients();
        });
        return connectPointToPoint(name, inputsOf(delegateOrNull), Collections.singletonList(z), backward,
                Schedule.EAGER, comm).outputs().get(0);
    }

    static Tensor sendAll(List<Tensor> xs, Communicator comm, int dst, int tag) {
        if (xs == null) {
            throw new IllegalArgumentException("sendAll: the list of tensors is null");
        }
        requireTensors("sendAll", xs);
        CommState state = CommState.of(comm);
        state.tags().checkUserTag("sendAll", tag);
        checkPeer("sendAll", comm, dst);
        state.reap();
        int n = xs.size();
        String name = "sendAll(rank " + comm.rank() + " -> " + dst + ", tag " + tag + ", " + n + " tensors)";
        GradientClaim claim = state.nextSendGradient(name, dst, tag);
        int gradTag = claim.tag();
        List<SendHandle> handles = new ArrayList<>();
        handles.add(state.isend(comm, Tensors.longs(LIST_MAGIC, n), dst, tag));
        boolean[] carries = new boolean[n];
        long[][] shapes = new long[n][];
        for (int i = 0; i < n; i++) {
            Tensor x = xs.get(i);
            carries[i] = Gradients.differentiable(x);
            shapes[i] = Tensors.shape(x);
            handles.add(state.isend(comm, x, dst, tag));
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

    static List<Tensor> recvAll(Communicator comm, int src, int tag, Tensor delegateOrNull) {
        return recvAll(comm, src, tag, delegateOrNull, true);
    }

    /**
     * {@link Functions#recvAll(Communicator, int, int, Tensor)} for a caller that carries the delegate on
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
        DelegateGradient delegate = DelegateGradient.of(delegateOrNull);
        String name = "recvAll(rank " + comm.rank() + " <- " + src + ", tag " + tag + ", " + n + " tensors)";
        Backward backward = claim.around(grads -> {
            for (int i = 0; i < n; i++) {
                if (dtypes[i] != null) {
                    Tensor g = grads.get(i);
                    state.isend(comm, Gradients.gradientOrMarker(g, dtypes[i]), src, gradTag);
                }
            }
            return delegate.gradients();
        });
        return connectPointToPoint(name, inputsOf(delegateOrNull), zs, backward, Schedule.EAGER, comm).outputs();
    }

    /** The tensors of a {@link Functions#sendAll} list, after its header. */
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

    /**
     * Throws if {@code z} is the header of a {@link Functions#sendAll} list, after receiving and dropping
     * the list's tensors: left queued, they would be taken for the next messages of the pair, and
     * a large one would keep the sender's {@link Functions#flush} waiting. The sender's delegate must then
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
}
