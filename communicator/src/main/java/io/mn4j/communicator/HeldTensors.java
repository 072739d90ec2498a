package io.mn4j.communicator;

import io.mn4j.tensor.Scopes;
import java.util.Iterator;
import java.util.function.Supplier;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;

/**
 * Tensors of nonblocking transfers, which MPI reads or writes after the call that made them has
 * returned: no caller's {@link PointerScope} may free them then. A held tensor is made outside
 * the caller's scopes with one reference of its own; the handle releases it when the transfer is
 * done, or hands it over to the scope open at that time, as if it had been made there.
 */
final class HeldTensors {
    private HeldTensors() {
    }

    /**
     * The tensor {@code make} returns, which must be one it made (not one made before: that
     * one's owner would never free it), outside every open scope.
     */
    static Tensor make(Supplier<Tensor> make) {
        try (PointerScope own = new PointerScope()) {
            Tensor t = make.get();
            t.retainReference();
            return t;
        }
    }

    /** Gives up the held reference: frees the tensor unless a scope or hand-over kept it. */
    static void release(Tensor t) {
        t.releaseReference();
    }

    /**
     * The held tensor as if made now: attached to the innermost open scope that takes tensors,
     * which frees it on close; without one, a new handle on its storage that is counted as any
     * tensor made outside scopes (the held one is released), so that a scope it is attached to
     * later frees it too.
     */
    static Tensor handOver(Tensor t) {
        for (Iterator<PointerScope> it = PointerScope.getScopeIterator(); it.hasNext(); ) {
            PointerScope scope = it.next();
            if (Scopes.attaches(scope, t)) {
                scope.attach(t);
                t.releaseReference();
                return t;
            }
        }
        Tensor unheld = new Tensor(t);
        t.releaseReference();
        return unheld;
    }

}
