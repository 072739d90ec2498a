package io.mn4j.functions.autograd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;

/** Pins: released exactly when LibTorch frees them, once each, with no entry left behind. */
class PinsTest {
    private static final TensorOptions F64 = new TensorOptions(torch.ScalarType.Double);

    /** Counts releases per owner. */
    private static final class Releases {
        final Map<Object, AtomicInteger> counts = new ConcurrentHashMap<>();

        void release(Object owner) {
            counts.computeIfAbsent(owner, o -> new AtomicInteger()).incrementAndGet();
        }

        int of(Object owner) {
            AtomicInteger c = counts.get(owner);
            return c == null ? 0 : c.get();
        }
    }

    /** {@code owner}'s pin is gone: released once, and no entry of {@code pins} is left. */
    private static void assertReleasedOnce(Pins<?> pins, Releases released, Object owner) {
        assertEquals(1, released.of(owner));
        assertEquals(0, pins.live());
    }

    /** What {@code make} returns, made in a scope that then releases every other handle made in it. */
    private static Tensor outliving(Supplier<Tensor> make) {
        try (PointerScope s = new PointerScope()) {
            Tensor t = make.get();
            t.retainReference();
            return t;
        }
    }

    @Test
    void indexPinIsReleasedWhenItsOnlyTensorIsClosed() {
        Releases released = new Releases();
        Pins<Object> pins = new Pins<>(released::release);
        Object owner = new Object();
        Tensor pin = pins.index(owner);
        assertEquals(torch.ScalarType.Long.value, pin.scalar_type().value);
        assertEquals(1, pin.dim());
        assertEquals(0, pin.size(0));
        assertFalse(pin.requires_grad());
        assertEquals(1, pins.live());
        assertEquals(0, released.of(owner));
        pin.close();
        assertReleasedOnce(pins, released, owner);
    }

    @Test
    void leafPinIsAZeroDimFloatThatRequiresGrad() {
        Releases released = new Releases();
        Pins<String> pins = new Pins<>(released::release);
        Tensor pin = pins.leaf("leaf");
        assertEquals(torch.ScalarType.Float.value, pin.scalar_type().value);
        assertEquals(0, pin.dim());
        assertTrue(pin.requires_grad());
        assertTrue(pin.is_leaf());
        assertEquals(0.0, pin.item_double());
        pin.close();
        assertReleasedOnce(pins, released, "leaf");
    }

    @Test
    void aPinSavedByANodeLivesWithTheGraph() {
        Releases released = new Releases();
        Pins<String> pins = new Pins<>(released::release);
        Tensor x = torch.arange(new Scalar(4), F64).requires_grad_(true);
        // The index is saved by index_select's node; our handle on it goes with the scope.
        Tensor y = outliving(() -> x.index_select(0, pins.index("graph")).sum());
        assertEquals(1, pins.live());
        assertEquals(0, released.of("graph"));
        y.close();
        assertReleasedOnce(pins, released, "graph");
    }

    @Test
    void aPinSavedByANodeIsReleasedOnceTheNodeHasRun() {
        Releases released = new Releases();
        Pins<String> pins = new Pins<>(released::release);
        Tensor x = torch.arange(new Scalar(4), F64).requires_grad_(true);
        Tensor y = outliving(() -> x.index_select(0, pins.index("run")).sum().add(x.sum()));
        y.backward();
        // The graph's root is still referenced, but backward has freed the saved index.
        assertReleasedOnce(pins, released, "run");
        y.close();
        assertEquals(1, released.of("run"));
    }

    @Test
    void aLeafPinLivesAsLongAsAGraphDependsOnIt() {
        Releases released = new Releases();
        Pins<String> pins = new Pins<>(released::release);
        Tensor h = outliving(() -> pins.leaf("leaf").mul(new Scalar(1.0)));
        assertEquals(1, pins.live());
        h.close();
        assertReleasedOnce(pins, released, "leaf");
    }

    @Test
    void manyPinsOnManyThreadsAreEachReleasedOnceAndLeaveNoEntry() throws Exception {
        Releases released = new Releases();
        Pins<Integer> pins = new Pins<>(released::release);
        int threads = 4;
        int perThread = 5000;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int base = t * perThread;
                done.add(pool.submit(() -> {
                    for (int i = 0; i < perThread; i += 100) {
                        try (PointerScope s = new PointerScope()) {
                            for (int k = i; k < i + 100; k++) {
                                int id = base + k;
                                if (id % 2 == 0) {
                                    pins.index(id);
                                } else {
                                    pins.leaf(id);
                                }
                            }
                        }
                    }
                }));
            }
            for (Future<?> f : done) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdown();
        }
        assertEquals(0, pins.live());
        assertEquals(threads * perThread, released.counts.size());
        for (int id = 0; id < threads * perThread; id++) {
            assertEquals(1, released.of(id), "owner " + id);
        }
    }

    @Test
    void registriesAreIndependent() {
        Releases a = new Releases();
        Releases b = new Releases();
        Pins<String> pinsA = new Pins<>(a::release);
        Pins<String> pinsB = new Pins<>(b::release);
        Tensor pa = pinsA.index("a");
        Tensor pb = pinsB.index("b");
        assertEquals(1, pinsA.live());
        assertEquals(1, pinsB.live());
        pa.close();
        assertEquals(0, pinsA.live());
        assertEquals(1, pinsB.live());
        assertEquals(1, a.of("a"));
        assertEquals(0, b.of("b"));
        pb.close();
        assertReleasedOnce(pinsB, b, "b");
    }
}
