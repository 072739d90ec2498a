package io.mn4j.functions;

import io.mn4j.functions.autograd.Backward;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.bytedeco.pytorch.Tensor;

/**
 * The gradient tag of one point-to-point message, held from its forward until its backward has
 * run or can no longer run ({@link CommState#nextSendGradient}, {@link CommState#nextRecvGradient}).
 */
final class GradientClaim {
    private final int tag;
    /** Gives the tag back; null where nothing is held (grad mode off: no backward). */
    private final Runnable free;
    private final AtomicBoolean released = new AtomicBoolean();

    GradientClaim(int tag, Runnable free) {
        this.tag = tag;
        this.free = free;
    }

    /** The tag the message's gradient travels with. */
    int tag() {
        return tag;
    }

    /** Gives the tag back; later calls do nothing. */
    void release() {
        if (free != null && released.compareAndSet(false, true)) {
            free.run();
        }
    }

    /**
     * Runs the forward receive of the claimed message; gives the tag back if it throws (no
     * function is made then, so no backward will).
     */
    <T> T receive(Supplier<T> receive) {
        try {
            return receive.get();
        } catch (RuntimeException e) {
            release();
            throw e;
        }
    }

    /** {@code backward}, giving the tag back once it has run or its function was released. */
    Backward around(Backward backward) {
        return new Backward() {
            @Override
            public List<Tensor> apply(List<Tensor> gradOutputs) throws Exception {
                try {
                    return backward.apply(gradOutputs);
                } finally {
                    release(); // a point-to-point backward runs once: its tag is free again
                }
            }

            @Override
            public void released() {
                release();
            }
        };
    }
}
