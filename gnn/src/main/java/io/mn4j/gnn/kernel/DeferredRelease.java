package io.mn4j.gnn.kernel;

import java.util.concurrent.ConcurrentLinkedQueue;
import org.bytedeco.javacpp.Pointer;

/**
 * Java handles that must outlive the callback that created them, released at the next safe point.
 *
 * <p>A tensor returned from a {@code TensorTensorHook} is copied by LibTorch after the callback
 * returns, so the callback cannot close its own handle; leaving it to the garbage collector would
 * keep the tensor's memory alive for an unpredictable time. Such handles are queued here and
 * closed at the start of the next hook call or aggregation (by then LibTorch holds its own
 * reference, so closing only drops ours).
 */
final class DeferredRelease {
    private static final ConcurrentLinkedQueue<Pointer> QUEUE = new ConcurrentLinkedQueue<>();

    private DeferredRelease() {}

    static void later(Pointer p) {
        if (p != null) QUEUE.add(p);
    }

    static void drain() {
        Pointer p;
        while ((p = QUEUE.poll()) != null) p.close();
    }

    static int pending() {
        return QUEUE.size();
    }
}
