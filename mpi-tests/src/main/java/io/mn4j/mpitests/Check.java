package io.mn4j.mpitests;

import io.mn4j.tensor.Tensors;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * Records the outcome of each check of a scenario on this rank (a failed check does not stop the
 * scenario, so one run reports every mismatch). The parent JUnit test asserts on the records.
 */
public final class Check {
    /** One check's outcome. */
    public record Outcome(String scenario, String name, boolean passed, String message) {
    }

    private final List<Outcome> outcomes = new ArrayList<>();
    private String scenario = "";

    void begin(String scenarioName) {
        this.scenario = scenarioName;
    }

    List<Outcome> drain() {
        List<Outcome> out = new ArrayList<>(outcomes);
        outcomes.clear();
        return out;
    }

    private void record(String name, boolean passed, String message) {
        outcomes.add(new Outcome(scenario, name, passed, message));
    }

    /** Passes when {@code condition} holds. */
    public void isTrue(String name, boolean condition, String messageIfNot) {
        record(name, condition, condition ? "" : messageIfNot);
    }

    /** Passes when the values are equal. */
    public void equal(String name, Object expected, Object actual) {
        boolean ok = expected == null ? actual == null : expected.equals(actual);
        record(name, ok, ok ? "" : "expected " + expected + " but got " + actual);
    }

    /** Passes when the doubles are within {@code tol} (absolute plus relative). */
    public void close(String name, double expected, double actual, double tol) {
        boolean ok = Math.abs(expected - actual) <= tol * (1 + Math.abs(expected));
        record(name, ok, ok ? "" : "expected " + expected + " but got " + actual + " (tol " + tol + ")");
    }

    /**
     * Passes when dtype and shape are equal and every element is within {@code tol}
     * (|a-b| <= tol * (1 + |b|)); tol 0 asks for exact equality.
     */
    public void tensorsClose(String name, Tensor expected, Tensor actual, double tol) {
        if (actual == null || expected == null) {
            record(name, false, "expected " + Tensors.describe(expected) + " but got " + Tensors.describe(actual));
            return;
        }
        if (expected.scalar_type().value != actual.scalar_type().value
                || !Arrays.equals(Tensors.shape(expected), Tensors.shape(actual))) {
            record(name, false, "expected " + Tensors.describe(expected) + " but got " + Tensors.describe(actual));
            return;
        }
        if (expected.numel() == 0) {
            record(name, true, "");
            return;
        }
        Tensor e = expected.to(ScalarType.Double);
        Tensor a = actual.to(ScalarType.Double);
        double worst = a.sub(e).abs().sub(e.abs().mul(new Scalar(tol))).max().item_double();
        boolean ok = worst <= tol;
        record(name, ok, ok ? "" : "tensors differ by up to " + a.sub(e).abs().max().item_double()
                + " (tol " + tol + "); expected " + preview(e) + " got " + preview(a));
    }

    /** Passes when {@code body} throws an exception whose message contains every fragment. */
    public void throwsWith(String name, Runnable body, String... fragments) {
        try {
            body.run();
            record(name, false, "expected an exception containing " + String.join(" & ", fragments)
                    + " but nothing was thrown");
        } catch (RuntimeException e) {
            String msg = String.valueOf(e.getMessage());
            for (String f : fragments) {
                if (!msg.contains(f)) {
                    record(name, false, "exception message lacks '" + f + "': " + msg);
                    return;
                }
            }
            record(name, true, "");
        }
    }

    /** Records an unexpected exception as a failure. */
    void failed(String name, Throwable t) {
        StringWriter sw = new StringWriter();
        t.printStackTrace(new PrintWriter(sw));
        record(name, false, sw.toString());
    }

    private static String preview(Tensor t) {
        Tensor flat = t.reshape(-1);
        long n = Math.min(6, flat.numel());
        StringBuilder sb = new StringBuilder("[");
        for (long i = 0; i < n; i++) {
            sb.append(i == 0 ? "" : ", ").append(flat.get(i).item_double());
        }
        return sb.append(flat.numel() > n ? ", ...]" : "]").toString();
    }
}
