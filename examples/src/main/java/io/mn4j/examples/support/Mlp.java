package io.mn4j.examples.support;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * A multi-layer perceptron described by its layer widths ({@code [784, 400, 400, 10]}: three
 * linear layers, ReLU after every one but the last), cut into contiguous stages so that its layers
 * can live on different ranks. Layer {@code i}'s initial weights depend only on the seed and
 * {@code i}, so a model cut into any number of stages starts from exactly the same parameters as
 * the whole model.
 */
public final class Mlp {
    private final int[] widths;

    /** An MLP with these widths: input, hidden..., output. */
    public Mlp(int... widths) {
        if (widths.length < 2) {
            throw new IllegalArgumentException("an MLP needs at least an input and an output width");
        }
        for (int w : widths) {
            if (w < 1) {
                throw new IllegalArgumentException("layer widths must be positive, got " + Arrays.toString(widths));
            }
        }
        this.widths = widths.clone();
    }

    /** An MLP with {@code in} inputs, the given hidden widths and {@code out} outputs. */
    public static Mlp of(int in, int[] hidden, int out) {
        int[] w = new int[hidden.length + 2];
        w[0] = in;
        System.arraycopy(hidden, 0, w, 1, hidden.length);
        w[w.length - 1] = out;
        return new Mlp(w);
    }

    /** Number of linear layers. */
    public int layers() {
        return widths.length - 1;
    }

    /** The widths, input first. */
    public int[] widths() {
        return widths.clone();
    }

    /** The widths joined by dashes, input first ({@code 784-256-10}), for run headers. */
    public String describe() {
        return Arrays.stream(widths).mapToObj(String::valueOf).collect(Collectors.joining("-"));
    }

    /** Parameters (weights and biases) of layer {@code i}. */
    public long parameters(int i) {
        return (long) widths[i] * widths[i + 1] + widths[i + 1];
    }

    /**
     * Cuts the layers into {@code parts} contiguous, non-empty stages so that the largest stage
     * holds as few parameters as possible: {@code result[r] = {firstLayer, endLayer}}.
     *
     * @throws IllegalArgumentException if there are fewer layers than parts
     */
    public int[][] split(int parts) {
        int n = layers();
        if (parts < 1 || parts > n) {
            throw new IllegalArgumentException("cannot cut " + n + " layers into " + parts
                    + " non-empty stages: use at most " + n + " ranks or more hidden layers");
        }
        long[] prefix = new long[n + 1];
        for (int i = 0; i < n; i++) {
            prefix[i + 1] = prefix[i] + parameters(i);
        }
        // best[k][j]: smallest possible largest stage when the first j layers form k stages
        long[][] best = new long[parts + 1][n + 1];
        int[][] cut = new int[parts + 1][n + 1];
        for (long[] row : best) {
            Arrays.fill(row, Long.MAX_VALUE);
        }
        best[0][0] = 0;
        for (int k = 1; k <= parts; k++) {
            for (int j = k; j <= n; j++) {
                for (int i = k - 1; i < j; i++) {
                    if (best[k - 1][i] == Long.MAX_VALUE) {
                        continue;
                    }
                    long v = Math.max(best[k - 1][i], prefix[j] - prefix[i]);
                    if (v < best[k][j]) {
                        best[k][j] = v;
                        cut[k][j] = i;
                    }
                }
            }
        }
        int[][] out = new int[parts][];
        int end = n;
        for (int k = parts; k >= 1; k--) {
            int begin = cut[k][end];
            out[k - 1] = new int[] {begin, end};
            end = begin;
        }
        return out;
    }

    /** Builds layers [from, to) as one stage, each initialised from {@code seed} and its index. */
    public Stage stage(int from, int to, long seed) {
        return new Stage(this, from, to, seed);
    }

    /** Contiguous layers of an {@link Mlp}, as a LibTorch module. */
    public static final class Stage extends Module {
        private final List<LinearImpl> linears = new ArrayList<>();
        private final int from;
        private final int to;
        private final boolean endsModel;

        Stage(Mlp mlp, int from, int to, long seed) {
            if (from < 0 || to > mlp.layers() || from >= to) {
                throw new IllegalArgumentException("bad layer range [" + from + ", " + to + ") of " + mlp.layers());
            }
            this.from = from;
            this.to = to;
            this.endsModel = to == mlp.layers();
            for (int i = from; i < to; i++) {
                torch.manual_seed(seed * 1_000_003L + i);
                linears.add(register_module("l" + i, new LinearImpl(mlp.widths[i], mlp.widths[i + 1])));
            }
        }

        /** The stage's layers applied to {@code x}, with ReLU after each except the model's last. */
        public Tensor forward(Tensor x) {
            Tensor h = x;
            for (int i = 0; i < linears.size(); i++) {
                h = linears.get(i).forward(h);
                if (!(endsModel && i == linears.size() - 1)) {
                    h = torch.relu(h);
                }
            }
            return h;
        }

        /** First layer index (inclusive). */
        public int from() {
            return from;
        }

        /** Last layer index (exclusive). */
        public int to() {
            return to;
        }

        /** Number of parameters of the stage. */
        public long parameterCount() {
            long n = 0;
            var ps = parameters();
            for (long i = 0; i < ps.size(); i++) {
                n += ps.get(i).numel();
            }
            return n;
        }
    }
}
