package io.mn4j.functions.autograd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.functions.autograd.CustomFunction.Result;
import io.mn4j.functions.autograd.CustomFunction.Schedule;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.BoolOptional;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorArrayRefOptional;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;

/** CustomFunction in one process: gradients, delegates, scheduling, release of the hooks. */
class CustomFunctionTest {
    private static final TensorOptions F64 = new TensorOptions(torch.ScalarType.Double);

    private static Tensor ramp(long n, double offset) {
        return torch.arange(new Scalar(n), F64).add(new Scalar(offset));
    }

    private static double maxDiff(Tensor a, Tensor b) {
        return a.sub(b).abs().max().item_double();
    }

    /** y = 3x computed outside autograd; backward multiplies by 3. */
    private static Result triple(Tensor x) {
        Tensor y;
        try (NoGradGuard g = new NoGradGuard()) {
            y = x.mul(new Scalar(3.0));
        }
        return CustomFunction.apply("triple", List.of(x), List.of(y),
                grads -> Collections.singletonList(grads.get(0) == null ? null : grads.get(0).mul(new Scalar(3.0))),
                Schedule.NATURAL, "me");
    }

    @Test
    void gradientFlowsThroughJavaBackward() {
        Tensor x = ramp(5, 1).requires_grad_(true);
        Tensor c = ramp(5, -2);
        Tensor y = triple(x).outputs().get(0);
        assertTrue(y.requires_grad());
        assertEquals(0, maxDiff(y, x.detach().mul(new Scalar(3.0))));
        y.mul(c).sum().backward();
        assertEquals(0, maxDiff(x.grad(), c.mul(new Scalar(3.0))));
    }

    @Test
    void anInputOffTheCpuIsRefusedNamingItsDevice() {
        // A meta tensor stands in for a GPU one: LibTorch's CPU build has no CUDA device.
        Tensor onMeta = torch.empty(new long[] {5}, new TensorOptions(new Device("meta")), null).requires_grad_(true);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> triple(onMeta));
        assertTrue(e.getMessage().contains("triple: input 0 is on meta"), e.getMessage());
        assertTrue(e.getMessage().contains("take CPU tensors"), e.getMessage());
    }

    @Test
    void composesWithOrdinaryOpsOnBothSides() {
        Tensor w = ramp(4, 0.5).requires_grad_(true);
        Tensor x = w.mul(w);
        Tensor y = triple(x).outputs().get(0).sin().sum();
        y.backward();
        // d/dw sin(3 w^2) = cos(3 w^2) * 6 w
        Tensor wd = w.detach();
        Tensor expected = wd.mul(wd).mul(new Scalar(3.0)).cos().mul(wd).mul(new Scalar(6.0));
        assertTrue(maxDiff(w.grad(), expected) < 1e-12);
    }

    @Test
    void unusedOutputsGetNullAndMissingGradientsAreZero() {
        Tensor x = ramp(3, 1).requires_grad_(true);
        List<List<Tensor>> seen = new ArrayList<>();
        Tensor a;
        Tensor b;
        try (NoGradGuard g = new NoGradGuard()) {
            a = x.mul(new Scalar(2.0));
            b = x.mul(new Scalar(5.0));
        }
        Result r = CustomFunction.apply("two", List.of(x), List.of(a, b), grads -> {
            seen.add(new ArrayList<>(Arrays.asList(grads.get(0) == null ? null : grads.get(0).clone(),
                    grads.get(1) == null ? null : grads.get(1).clone())));
            Tensor gx = grads.get(0).mul(new Scalar(2.0));
            return Collections.singletonList(grads.get(1) == null ? gx : gx.add(grads.get(1).mul(new Scalar(5.0))));
        }, Schedule.NATURAL, null);
        r.outputs().get(0).sum().backward();
        assertEquals(1, seen.size());
        assertNull(seen.get(0).get(1));
        assertEquals(0, maxDiff(x.grad(), torch.full(new long[] {3}, new Scalar(2.0), F64)));
    }

    @Test
    void delegateRunsBackwardOfAFunctionWithoutOutputs() {
        Tensor x = ramp(3, 1).requires_grad_(true);
        Tensor given = ramp(3, 10);
        int[] calls = {0};
        Result r = CustomFunction.apply("sink", List.of(x), List.of(), grads -> {
            calls[0]++;
            assertTrue(grads.isEmpty());
            return Collections.singletonList(given);
        }, Schedule.NATURAL, null);
        Tensor delegate = r.delegate();
        assertEquals(0, delegate.dim());
        assertEquals(0.0, delegate.item_double());
        assertTrue(delegate.requires_grad());
        delegate.backward();
        assertEquals(1, calls[0]);
        assertEquals(0, maxDiff(x.grad(), given));
    }

    @Test
    void inputsWithoutGradStillLetBackwardRun() {
        Tensor x = ramp(3, 1);
        int[] calls = {0};
        Tensor delegate = CustomFunction.apply("noGradInput", List.of(x), List.of(), grads -> {
            calls[0]++;
            return Collections.singletonList(null);
        }, Schedule.NATURAL, null).delegate();
        delegate.backward();
        assertEquals(1, calls[0]);
    }

    @Test
    void delegateChainsIntoANextFunction() {
        Tensor x = ramp(3, 1).requires_grad_(true);
        List<String> order = new ArrayList<>();
        Tensor d = CustomFunction.apply("first", List.of(x), List.of(), grads -> {
            order.add("first");
            return Collections.singletonList(ramp(3, 0));
        }, Schedule.NATURAL, null).delegate();
        Tensor z;
        try (NoGradGuard g = new NoGradGuard()) {
            z = ramp(2, 7);
        }
        Tensor out = CustomFunction.apply("second", List.of(d), List.of(z), grads -> {
            order.add("second");
            return Collections.singletonList(null);
        }, Schedule.NATURAL, null).outputs().get(0);
        out.sum().backward();
        assertEquals(List.of("second", "first"), order);
        assertEquals(0, maxDiff(x.grad(), ramp(3, 0)));
    }

    @Test
    void eagerBackwardRunsBeforeNaturalOnesThatAreReadyTogether() {
        List<String> order = new ArrayList<>();
        Tensor a = ramp(2, 0);
        Tensor b = ramp(2, 1);
        Tensor c = ramp(2, 2);
        Tensor ya = CustomFunction.apply("eager", List.of(), List.of(a), g -> {
            order.add("eager");
            return List.of();
        }, Schedule.EAGER, null).outputs().get(0);
        Tensor yb = CustomFunction.apply("natural-older", List.of(), List.of(b), g -> {
            order.add("natural-older");
            return List.of();
        }, Schedule.NATURAL, null).outputs().get(0);
        Tensor yc = CustomFunction.apply("natural-newer", List.of(), List.of(c), g -> {
            order.add("natural-newer");
            return List.of();
        }, Schedule.NATURAL, null).outputs().get(0);
        ya.add(yb).add(yc).sum().backward();
        // LibTorch runs the ready node with the highest sequence number first (newest first);
        // EAGER lifts a function above all of them.
        assertEquals(List.of("eager", "natural-newer", "natural-older"), order);
    }

    @Test
    void wrongGradientShapeIsReported() {
        Tensor x = ramp(3, 1).requires_grad_(true);
        Tensor d = CustomFunction.apply("bad", List.of(x), List.of(), g -> Collections.singletonList(ramp(4, 0)),
                Schedule.NATURAL, null).delegate();
        RuntimeException e = assertThrows(RuntimeException.class, d::backward);
        assertTrue(e.getMessage().contains("bad") && e.getMessage().contains("shape"), e.getMessage());
    }

    @Test
    void exceptionsOfTheBackwardReachTheCaller() {
        Tensor x = ramp(3, 1).requires_grad_(true);
        Tensor d = CustomFunction.apply("throws", List.of(x), List.of(), g -> {
            throw new IllegalStateException("peer is gone");
        }, Schedule.NATURAL, null).delegate();
        RuntimeException e = assertThrows(RuntimeException.class, d::backward);
        assertTrue(e.getMessage().contains("peer is gone"), e.getMessage());
    }

    @Test
    void withoutGradModeNothingIsRecorded() {
        Tensor x = ramp(3, 1).requires_grad_(true);
        Result r;
        try (NoGradGuard g = new NoGradGuard()) {
            r = triple(x);
        }
        assertFalse(r.outputs().get(0).requires_grad());
        assertFalse(r.delegate().requires_grad());
    }

    @Test
    void nonFloatingOutputsAreReturnedUnchanged() {
        Tensor ints = torch.arange(new Scalar(4));
        Tensor out = CustomFunction.apply("ints", List.of(), List.of(ints), g -> List.of(), Schedule.NATURAL, null)
                .outputs().get(0);
        assertSame(ints, out);
    }

    @Test
    void oneOutputMeansNoDelegate() {
        assertNull(triple(ramp(3, 1).requires_grad_(true)).delegate());
    }

    @Test
    void ownerIsKnownForDelegatesAndOutputs() {
        Tensor x = ramp(3, 1).requires_grad_(true);
        Result r = triple(x);
        Tensor d = CustomFunction.apply("sink", List.of(x), List.of(), g -> Collections.singletonList(null),
                Schedule.NATURAL, "sink owner").delegate();
        assertEquals("sink owner", CustomFunction.ownerOf(d));
        assertEquals("me", CustomFunction.ownerOf(r.outputs().get(0)));
        assertNull(CustomFunction.ownerOf(x));
        assertNull(CustomFunction.ownerOf(x.mul(new Scalar(2.0))));
    }

    /**
     * The number of live functions once graphs that earlier tests left to the garbage collector are
     * gone: JavaCPP's deallocator thread frees them at any time, which would move the count under a
     * test that compares it.
     */
    private static int settledLiveFunctions() throws InterruptedException {
        int last = -1;
        for (int stable = 0, i = 0; stable < 3 && i < 100; i++) {
            System.gc();
            Thread.sleep(20);
            int now = CustomFunction.liveFunctions();
            stable = now == last ? stable + 1 : 0;
            last = now;
        }
        return last;
    }

    @Test
    void hooksAreReleasedWhenTheGraphDies() throws InterruptedException {
        int before = settledLiveFunctions();
        try (PointerScope scope = new PointerScope()) {
            for (int i = 0; i < 50; i++) {
                triple(triple(ramp(3, i).requires_grad_(true)).outputs().get(0));
            }
            assertTrue(CustomFunction.liveFunctions() >= before + 100);
        }
        // No backward ran, but every tensor of the loop was released by the scope: graphs gone.
        assertEquals(before, CustomFunction.liveFunctions());
    }

    @Test
    void hooksOfFunctionsWithInputsAreReleasedRightAfterBackward() throws InterruptedException {
        int before = settledLiveFunctions();
        List<Tensor> alive = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            Tensor y = triple(triple(ramp(3, i).requires_grad_(true)).outputs().get(0)).outputs().get(0);
            alive.add(y);
            y.sum().backward();
        }
        // The outputs (and so the graphs) are still referenced; the hooks are not needed any more.
        assertEquals(before, CustomFunction.liveFunctions());
        assertEquals(20, alive.size());
    }

    /**
     * A backward may return a tensor it keeps (a cached constant): LibTorch must not make it a
     * leaf's gradient, which the next backward pass would accumulate into in place.
     */
    @Test
    void aTensorTheBackwardKeepsIsNotAccumulatedInto() {
        Tensor cached = ramp(3, 2);
        Tensor x = ramp(3, 1).requires_grad_(true);
        for (int pass = 1; pass <= 2; pass++) {
            CustomFunction.apply("cached", List.of(x), List.of(), g -> Collections.singletonList(cached),
                    Schedule.NATURAL, null).delegate().backward();
        }
        assertEquals(0, maxDiff(cached, ramp(3, 2)), "the cached tensor was changed");
        assertEquals(0, maxDiff(x.grad(), ramp(3, 2).mul(new Scalar(2.0))));
    }

    @Test
    void retainGraphRunsTheJavaBackwardAgain() {
        Tensor x = ramp(3, 1).requires_grad_(true);
        Tensor y = triple(x).outputs().get(0).sum();
        y.backward(torch.ones(new long[0], F64), new BoolOptional(true), false,
                new TensorArrayRefOptional());
        y.backward();
        assertEquals(0, maxDiff(x.grad(), torch.full(new long[] {3}, new Scalar(6.0), F64)));
    }

    /** A function whose backward must run once: a second backward pass is refused, retained graph or not. */
    @Test
    void aBackwardThatRunsOnceIsNotRunAgain() {
        Tensor x = ramp(3, 1).requires_grad_(true);
        int[] calls = {0};
        Tensor y;
        try (NoGradGuard g = new NoGradGuard()) {
            y = x.mul(new Scalar(2.0));
        }
        Tensor out = CustomFunction.apply("once", List.of(x), List.of(y), grads -> {
            calls[0]++;
            return Collections.singletonList(grads.get(0).mul(new Scalar(2.0)));
        }, Schedule.NATURAL, null, "the peer sends one gradient").outputs().get(0);
        Tensor loss = out.sum();
        loss.backward(torch.ones(new long[0], F64), new BoolOptional(true), false,
                new TensorArrayRefOptional());
        RuntimeException e = assertThrows(RuntimeException.class, loss::backward);
        assertTrue(e.getMessage().contains("once: its backward already ran; the peer sends one gradient"),
                e.getMessage());
        e = assertThrows(RuntimeException.class, () -> out.mul(new Scalar(3.0)).sum().backward());
        assertTrue(e.getMessage().contains("already ran"), e.getMessage());
        assertEquals(1, calls[0]);
        assertEquals(0, maxDiff(x.grad(), torch.full(new long[] {3}, new Scalar(2.0), F64)));
    }

    /**
     * After a backward pass without retain_graph the function's state is released; a new graph on
     * its output that reaches it again gets a clear exception, also once the garbage collector has
     * run (the hooks live as long as their nodes), instead of running the backward again or a
     * NullPointerException.
     */
    @Test
    void aSecondBackwardAfterReleaseIsRefusedClearly() throws InterruptedException {
        for (boolean withInput : new boolean[] {true, false}) {
            Tensor x = ramp(3, 1).requires_grad_(true);
            int[] calls = {0};
            Tensor y;
            try (NoGradGuard g = new NoGradGuard()) {
                y = x.mul(new Scalar(3.0));
            }
            Tensor out = CustomFunction.apply("again", withInput ? List.of(x) : List.of(), List.of(y), grads -> {
                calls[0]++;
                return withInput ? Collections.singletonList(grads.get(0).mul(new Scalar(3.0))) : List.of();
            }, Schedule.NATURAL, null).outputs().get(0);
            out.sum().backward();
            settledLiveFunctions();
            if (withInput) {
                RuntimeException e = assertThrows(RuntimeException.class, () -> out.mul(new Scalar(2.0)).sum().backward());
                assertTrue(e.getMessage().contains("again: its backward already ran") && e.getMessage().contains(
                        "retain_graph"), e.getMessage());
                assertEquals(1, calls[0]);
            } else {
                // Without inputs nothing is released by a backward pass: it may run again.
                out.mul(new Scalar(2.0)).sum().backward();
                assertEquals(2, calls[0]);
            }
        }
    }
}
