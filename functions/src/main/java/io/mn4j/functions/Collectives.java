package io.mn4j.functions;

import static io.mn4j.functions.ArgumentChecks.checkDelegate;
import static io.mn4j.functions.ArgumentChecks.describe;
import static io.mn4j.functions.ArgumentChecks.requireTensor;
import static io.mn4j.functions.ArgumentChecks.requireTensors;
import static io.mn4j.functions.CommunicatingFunction.connectCollective;
import static io.mn4j.functions.CommunicatingFunction.inputsOf;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.ReduceOp;
import io.mn4j.functions.autograd.Backward;
import io.mn4j.functions.autograd.CustomFunction.Schedule;
import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * The differentiable collectives (ChainerMN's {@code collective_communication.py}): allgather,
 * alltoall, bcast, gather, scatter and allreduce; the contract is on {@link Functions}. The
 * backward of allgather, bcast and allreduce is a collective and checks first that every rank
 * reached the same one ({@link CommState#checkOrder}); that of gather, scatter and alltoall is
 * point to point, each gradient on a tag of its own, so only floating-point pairs take part.
 */
final class Collectives {
    private Collectives() {
    }

    static List<Tensor> allgather(Communicator comm, Tensor x) {
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
            List<Tensor> parts = comm.alltoall(Gradients.gradientsOrMarkers(grads, dtypes));
            return Collections.singletonList(Gradients.sumReceived(parts, shape, name));
        };
        return connectCollective(name, Collections.singletonList(x), ys, backward, Schedule.NATURAL, comm).outputs();
    }

    static List<Tensor> alltoall(Communicator comm, List<Tensor> xs) {
        if (xs != null) {
            requireTensors("alltoall", xs);
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
                    state.isend(comm, Gradients.gradientOrMarker(g, dtypes[j]), j, gradTo[j]);
                }
            }
            List<Tensor> out = new ArrayList<>(n);
            for (int j = 0; j < n; j++) {
                out.add(!floatIn[j] ? null : j == me ? grads.get(me)
                        : Gradients.receivedGradient(comm.recv(j, gradFrom[j]), shapes[j], name + " from rank " + j));
            }
            return out;
        };
        return connectCollective(name, xs, ys, backward, floatsOut.isEmpty() ? Schedule.EAGER : Schedule.NATURAL,
                comm).outputs();
    }

    static Tensor bcast(Communicator comm, Tensor xOrNull, int root) {
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
        DelegateGradient delegate = isRoot ? null : DelegateGradient.of(xOrNull);
        String name = "bcast#" + id;
        Backward backward = grads -> {
            state.checkOrder(comm, "bcast", id);
            Tensor g = grads.get(0);
            List<Tensor> all = comm.gather(Gradients.gradientOrMarker(g, dtype), root);
            return isRoot ? Collections.singletonList(Gradients.sumReceived(all, shape, name)) : delegate.gradients();
        };
        List<Tensor> inputs = isRoot ? Collections.singletonList(xOrNull) : inputsOf(xOrNull);
        return connectCollective(name, inputs, Collections.singletonList(y), backward, Schedule.NATURAL, comm)
                .outputs().get(0);
    }

    static Gathered gather(Communicator comm, Tensor x, int root) {
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
                return Gathered.elsewhere(comm.rank(), root, torch.zeros(new long[0]));
            }
            int gradTag = state.collectiveSendGradient(root);
            Backward backward = grads -> Collections.singletonList(
                    Gradients.receivedGradient(comm.recv(root, gradTag), shape, name));
            return Gathered.elsewhere(comm.rank(), root, connectCollective(name, Collections.singletonList(x), ys, backward,
                    Schedule.NATURAL, comm).delegate());
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
            return Gathered.atRoot(root, ys);
        }
        torch.ScalarType[] dtypes = dtypes(ys);
        Backward backward = grads -> {
            for (int j = 0; j < n; j++) {
                if (floats[j] && j != root) {
                    Tensor g = grads.get(j);
                    state.isend(comm, Gradients.gradientOrMarker(g, dtypes[j]), j, gradTo[j]);
                }
            }
            return Collections.singletonList(floats[root] ? grads.get(root) : null);
        };
        return Gathered.atRoot(root, connectCollective(name, Collections.singletonList(x), ys, backward, Schedule.EAGER, comm)
                .outputs());
    }

    static Tensor scatter(Communicator comm, List<Tensor> xsOrNull, int root) {
        boolean isRoot = comm.rank() == root;
        if (isRoot && xsOrNull != null) {
            requireTensors("scatter", xsOrNull);
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
                state.isend(comm, Gradients.gradientOrMarker(g, dtype), root, gradTag);
                return List.of();
            };
            return connectCollective(name, List.of(), Collections.singletonList(y), backward, Schedule.EAGER, comm)
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
        return connectCollective(name, xsOrNull, Collections.singletonList(y), backward, Schedule.NATURAL, comm)
                .outputs().get(0);
    }

    static Tensor allreduce(Communicator comm, Tensor x, ReduceOp op) {
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
            Tensor summed = comm.allreduce(g != null ? g : Tensors.zeros(dtype, shape), op);
            return Collections.singletonList(summed);
        };
        return connectCollective(name, Collections.singletonList(x), Collections.singletonList(y), backward,
                Schedule.NATURAL, comm).outputs().get(0);
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
}
