package io.mn4j.functions;

import io.mn4j.communicator.Communicator;
import io.mn4j.functions.autograd.CustomFunction;
import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.pytorch.Tensor;

/** The argument checks the differentiable functions share, each throwing IllegalArgumentException. */
final class ArgumentChecks {
    private ArgumentChecks() {
    }

    static void requireTensor(String op, Tensor x) {
        if (x == null || !x.defined()) {
            throw new IllegalArgumentException(op + ": the tensor is null or undefined");
        }
    }

    /** Every element of {@code xs} is a defined tensor ({@code op} names the list). */
    static void requireTensors(String op, List<Tensor> xs) {
        for (int i = 0; i < xs.size(); i++) {
            requireTensor(op + " element " + i, xs.get(i));
        }
    }

    static void checkPeer(String op, Communicator comm, int peer) {
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

    /** A delegate from another communicator would order the backward of the wrong messages. */
    static void checkDelegate(String op, Communicator comm, Tensor delegate) {
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

    /** The tensors' dtypes and shapes, for error messages. */
    static String describe(List<Tensor> ts) {
        List<String> out = new ArrayList<>();
        for (Tensor t : ts) {
            out.add(Tensors.describe(t));
        }
        return String.join(", ", out);
    }
}
