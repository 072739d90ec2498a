package io.mn4j.functions.autograd;

import java.util.ArrayList;
import java.util.List;
import org.bytedeco.pytorch.TensorVector;

/**
 * A vector an input-gradient hook returned to LibTorch, which copies it after the hook returns:
 * released by whichever comes first, the next hook on the same thread or the release of its
 * function's state, so that a gradient the size of an activation does not outlive the backward pass.
 */
final class ReturnedVector {
    /**
     * Vectors returned on this thread, by hooks of a backward pass that keeps its graph
     * ({@code retain_graph}) among others, not yet released.
     */
    private static final ThreadLocal<List<ReturnedVector>> ON_THREAD = ThreadLocal.withInitial(ArrayList::new);

    private TensorVector vector;

    private ReturnedVector(TensorVector vector) {
        this.vector = vector;
    }

    /** Takes over one reference of {@code vector}, which a hook is about to return. */
    static ReturnedVector handedOver(TensorVector vector) {
        ReturnedVector r = new ReturnedVector(vector);
        ON_THREAD.get().add(r);
        return r;
    }

    /** Releases the vectors earlier hooks on this thread returned: LibTorch has copied them by now. */
    static void releaseEarlier() {
        List<ReturnedVector> list = ON_THREAD.get();
        for (ReturnedVector r : list) {
            r.release();
        }
        list.clear();
    }

    synchronized void release() {
        if (vector != null) {
            vector.releaseReference();
            vector = null;
        }
    }
}
