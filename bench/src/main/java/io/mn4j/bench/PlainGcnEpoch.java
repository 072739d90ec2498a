package io.mn4j.bench;

import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.nn.GnnModel;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Adam;
import org.bytedeco.pytorch.AdamOptions;
import org.bytedeco.pytorch.LongOptional;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.T_TensorTensorTensorTensor_T;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptional;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.bytedeco.pytorch.global.torch;

/**
 * Kipf and Welling's 2-layer GCN on the whole graph with LibTorch ops only: {@code A_hat·(X·W1)+b1},
 * ReLU, {@code A_hat·(H·W2)+b2}, dropout before each layer, as {@code GCNConv} orders it (linear
 * map first).
 */
final class PlainGcnEpoch extends GnnEpochBenchmark.Variant {
    final Tensor rowptr;
    final Tensor col;
    final Tensor weight;
    final Tensor csr;
    final Tensor x;
    final Tensor labels;
    final Tensor trainIdx;
    final Tensor[] masks;
    final Tensor w1;
    final Tensor b1;
    final Tensor w2;
    final Tensor b2;
    final Adam adam;
    final boolean sparse;
    final boolean torchDropout;
    double dropout;

    PlainGcnEpoch(String name, Graph g, int hidden, boolean sparse, boolean torchDropout, double dropout) {
        super(name);
        this.dropout = dropout;
        this.sparse = sparse;
        this.torchDropout = torchDropout;
        try (Graph loops = g.withSelfLoops()) {
            long n = loops.numNodes();
            Tensor deg = loops.inDegrees().to(ScalarType.Float);
            Tensor rowOf = torch.repeat_interleave(torch.arange(new Scalar(n)), loops.inDegrees());
            rowptr = loops.rowptr().clone();
            col = loops.col().clone();
            weight = deg.index_select(0, rowOf).mul(deg.index_select(0, col)).rsqrt().contiguous();
            csr = sparse ? torch.sparse_csr_tensor(rowptr, col, weight, new long[] {n, n}, new TensorOptions(ScalarType.Float)) : null;
        }
        x = g.features().clone();
        labels = g.labels().clone();
        trainIdx = g.trainMask().nonzero().squeeze(1);
        masks = new Tensor[] {g.trainMask().clone(), g.valMask().clone(), g.testMask().clone()};
        long f = g.numFeatures();
        long c = g.numClasses();
        w1 = glorot(f, hidden).set_requires_grad(true);
        b1 = torch.zeros(hidden).set_requires_grad(true);
        w2 = glorot(hidden, c).set_requires_grad(true);
        b2 = torch.zeros(c).set_requires_grad(true);
        AdamOptions o = new AdamOptions(0.01);
        o.weight_decay().put(5e-4);
        adam = new Adam(new TensorVector(w1, b1, w2, b2), o);
    }

    static Tensor glorot(long in, long out) {
        double a = Math.sqrt(6.0 / (in + out));
        return torch.rand(in, out).mul(new Scalar(2 * a)).sub(new Scalar(a));
    }

    void copyParameters(GnnModel m) {
        TensorVector p = m.parameters();
        try (NoGradGuard g = new NoGradGuard()) {
            w1.copy_(p.get(0));
            b1.copy_(p.get(1));
            w2.copy_(p.get(2));
            b2.copy_(p.get(3));
        }
    }

    Tensor aggregate(Tensor h) {
        if (sparse) {
            return csr.matmul(h);
        }
        T_TensorTensorTensorTensor_T r = torch.embedding_bag(h, col, rowptr, false, 0, false, new TensorOptional(weight), true);
        return new Tensor(r.get0());
    }

    Tensor drop(Tensor h, boolean training) {
        if (!training || dropout == 0) {
            return h;
        }
        return torchDropout ? torch.dropout(h, dropout, true) : h.mul(mask(h, dropout));
    }

    Tensor forward(boolean training) {
        Tensor h = aggregate(drop(x, training).matmul(w1)).add(b1).relu();
        return aggregate(drop(h, training).matmul(w2)).add(b2);
    }

    /** One training step and evaluation; returns the loss. */
    double epoch() {
        try (PointerScope s = new PointerScope()) {
            adam.zero_grad();
            Tensor out = forward(true);
            Tensor loss = torch.nll_loss(torch.log_softmax(out.index_select(0, trainIdx), 1), labels.index_select(0, trainIdx));
            loss.backward();
            adam.step();
            try (NoGradGuard g = new NoGradGuard()) {
                Tensor correct = forward(false).argmax(new LongOptional(1), false).eq(labels);
                double sink = 0;
                for (Tensor m : masks) {
                    sink += correct.logical_and(m).sum().item_double() / Math.max(1, m.sum().item_double());
                }
                if (sink < 0) {
                    throw new AssertionError();
                }
            }
            return loss.item_double();
        }
    }

    @Override
    void runEpoch() {
        epoch();
    }

    @Override
    public void close() {
        adam.close();
    }

    /**
     * The dropout mask of mn4j's {@code Dropout}, written here without mn4j: 0 with probability p
     * else 1/(1-p), drawn in Java in parallel chunks straight into tensor memory (LibTorch's
     * {@code bernoulli_} is serial in this build).
     */
    private static Tensor mask(Tensor like, double p) {
        long n = like.numel();
        Tensor m = torch.empty(like.sizes().vec().get(), new TensorOptions(ScalarType.Float), null);
        long seed = torch.randint(Long.MAX_VALUE, new long[] {1}, new TensorOptions(ScalarType.Long)).item_long();
        int threshold = (int) Math.round((1 - p) * (1 << 24));
        float keep = (float) (1 / (1 - p));
        int chunk = 1 << 16;
        FloatPointer base = new FloatPointer(m.data_ptr());
        IntStream.range(0, (int) ((n + chunk - 1) / chunk)).parallel().forEach(c -> {
            long first = (long) c * chunk;
            int len = (int) Math.min(chunk, n - first);
            float[] buf = new float[len + 1];
            SplittableRandom r = new SplittableRandom(seed + c * 0x9E3779B97F4A7C15L);
            for (int i = 0; i < len; i += 2) {
                long bits = r.nextLong();
                buf[i] = keep * ((((int) bits & 0xFFFFFF) - threshold) >>> 31);
                buf[i + 1] = keep * ((((int) (bits >>> 32) & 0xFFFFFF) - threshold) >>> 31);
            }
            new FloatPointer(base).position(first).put(buf, 0, len);
        });
        return m;
    }
}
