package io.mn4j.gnn.nn;

import io.mn4j.communicator.Communicator;
import io.mn4j.functions.MultiNodeBatchNorm;
import io.mn4j.gnn.sampling.Block;
import io.mn4j.gnn.shard.GraphShardManager;
import io.mn4j.tensor.Scopes;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.IntFunction;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * A stack of graph layers of one kind: dropout, layer, [batch norm], activation, ..., dropout, last
 * layer (raw class scores). GCN and SAGE use ReLU; GAT uses ELU with {@code heads} heads in hidden
 * layers and one head in the last (as PyG's Cora examples), and drops its attention coefficients
 * with the same probability as its inputs (the GAT paper's, PyG's {@code GATConv(dropout=p)}).
 *
 * <p>Dropout masks are functions of what they drop: of the {@link #dropoutSeed seed}, the
 * {@link #step() step} (training forward passes count from 0), the site (2·i for layer i's input,
 * 2·i+1 for its attention) and the ids of the nodes or edges, in the numbering the shard manager's
 * {@link GraphShardManager#nodeIds(Tensor) nodeIds} set (for sampled blocks: the sampler's). One
 * process and any number of ranks, in every aggregation mode, thus train the same model.
 */
public final class GnnModel extends Module {
    /** The layer kinds. */
    public enum Kind {
        GCN, SAGE, GAT;

        public static Kind parse(String s) {
            return valueOf(s.toUpperCase(Locale.ROOT));
        }
    }

    private final Kind kind;
    private final long outputs;
    private final List<Module> layers = new ArrayList<>();
    private final double dropout;
    private final List<MultiNodeBatchNorm> norms = new ArrayList<>();
    private final long hidden;
    private long seed;
    private long step;

    /**
     * @param layers  number of graph layers (≥ 1)
     * @param hidden  hidden width (for GAT: per head × heads)
     * @param heads   attention heads of hidden GAT layers (ignored otherwise)
     */
    public GnnModel(Kind kind, long in, long hidden, long out, int layers, double dropout, int heads) {
        super("GnnModel");
        if (layers < 1) {
            throw new IllegalArgumentException("a model needs at least one layer, got " + layers);
        }
        this.kind = kind;
        this.outputs = out;
        if (!(dropout >= 0 && dropout < 1)) {
            throw new IllegalArgumentException("dropout must be in [0, 1), got " + dropout);
        }
        this.dropout = dropout;
        this.hidden = hidden;
        long width = in;
        for (int i = 0; i < layers; i++) {
            boolean last = i == layers - 1;
            long target = last ? out : hidden;
            Module layer;
            switch (kind) {
                case GCN:
                    layer = new GCNConv(width, target);
                    break;
                case SAGE:
                    layer = new SAGEConv(width, target);
                    break;
                default:
                    int h = last ? 1 : heads;
                    if (target % h != 0) {
                        throw new IllegalArgumentException("GAT hidden width " + target + " is not a multiple of " + h + " heads");
                    }
                    layer = new GATConv(width, (int) (target / h), h);
            }
            this.layers.add(register_module("layer" + i, layer));
            width = target;
        }
    }

    public Kind kind() {
        return kind;
    }

    /** Width of the last layer's output: the number of classes. */
    public long outputs() {
        return outputs;
    }

    /** Sets the seed of the dropout masks (default 0); every rank must set the same. */
    public GnnModel dropoutSeed(long seed) {
        this.seed = seed;
        return this;
    }

    /** The seed of the dropout masks. */
    public long dropoutSeed() {
        return seed;
    }

    /** The step the next training forward pass draws its masks for: training forward passes so far, unless set. */
    public long step() {
        return step;
    }

    /** Sets the step the next training forward pass draws its masks for (to repeat or resume a run's masks). */
    public GnnModel step(long step) {
        this.step = step;
        return this;
    }

    /**
     * Adds batch normalisation after every layer but the last, before the activation, over every
     * node of every rank ({@link MultiNodeBatchNorm}, as SAR trains its large-graph models): the
     * same statistics as one process's over the whole graph. In evaluation ({@code training}
     * false) the running statistics are used. Call it before handing the parameters to an
     * optimizer; every rank must, on communicators of the same ranks.
     *
     * @throws IllegalStateException if the model has batch norm already
     */
    public GnnModel batchNorm(Communicator comm) {
        if (!norms.isEmpty()) {
            throw new IllegalStateException("this model has batch norm already");
        }
        torch.ScalarType type = parameters().get(0).scalar_type();
        for (int i = 0; i < layers.size() - 1; i++) {
            norms.add(register_module("norm" + i, new MultiNodeBatchNorm(comm, hidden, 1e-5, 0.1, true, type)));
        }
        return this;
    }

    /** The batch norms between the layers (none without {@link #batchNorm}). */
    public List<MultiNodeBatchNorm> batchNorms() {
        return List.copyOf(norms);
    }

    /**
     * Class scores of this rank's nodes, [numLocal, out]. Collective. When {@code training}, the
     * dropout masks are those of the current {@link #step()}, which then advances.
     */
    public Tensor forward(GraphShardManager graph, Tensor x, boolean training) {
        long[] ids = training && dropout > 0 ? graph.nodeIds() : null;
        return stack(x, training, i -> ids, (i, h, key) -> {
            Module layer = layers.get(i);
            if (layer instanceof GCNConv gcn) {
                return gcn.forward(graph, h);
            } else if (layer instanceof SAGEConv sage) {
                return sage.forward(graph, h);
            }
            return ((GATConv) layer).forward(graph, h, key == null ? null : DropoutKey.of(seed, key.step(), 2 * i + 1), dropout);
        });
    }

    /**
     * Class scores of a sampled batch's seeds, [seeds, out]: layer i runs on block i, from the
     * rows {@code x} of the first block's sources (the sample's input nodes). SAGE models only.
     *
     * @throws IllegalArgumentException for another kind of model, or a sample with another number
     *     of blocks than the model has layers
     */
    public Tensor forward(List<Block> blocks, Tensor x, boolean training) {
        if (kind != Kind.SAGE) {
            throw new IllegalArgumentException("sampled mini-batches train SAGE models; this model is " + kind);
        }
        if (blocks.size() != layers.size()) {
            throw new IllegalArgumentException("a sample of " + blocks.size() + " hops for a model of " + layers.size()
                    + " layers: sample one hop per layer");
        }
        return stack(x, training, i -> blocks.get(i).srcNodes(), (i, h, key) -> ((SAGEConv) layers.get(i)).forward(blocks.get(i), h));
    }

    /** Layer i on its (dropped) input; {@code key}: that of its input's dropout, null when not training. */
    private interface Layer {
        Tensor apply(int i, Tensor h, DropoutKey key);
    }

    /**
     * Dropout (of the rows whose ids {@code ids} gives for layer i), layer i, batch norm,
     * activation, for every layer; the last without batch norm and activation.
     */
    private Tensor stack(Tensor x, boolean training, IntFunction<long[]> ids, Layer layer) {
        long current = step;
        if (training) {
            step++;
        }
        // Activations' handles go with this call: autograd's references alone keep them, so backward
        // frees each once it has used it, not when the caller's scope closes.
        PointerScope outer = PointerScope.getInnerScope();
        try (PointerScope scope = new PointerScope()) {
            Tensor h = x;
            for (int i = 0; i < layers.size(); i++) {
                DropoutKey key = training ? DropoutKey.of(seed, current, 2 * i) : null;
                h = layer.apply(i, Dropout.apply(h, dropout, key, key == null || dropout == 0 ? null : ids.apply(i)), key);
                if (i < layers.size() - 1) {
                    if (!norms.isEmpty()) {
                        h = normalise(norms.get(i), h, training);
                    }
                    // In place: autograd then keeps the activation's output (the next layer's input,
                    // kept anyway) and the pre-activation, which no layer saves, is not held beside it.
                    h = kind == Kind.GAT ? torch.elu_(h) : torch.relu_(h);
                }
            }
            return Scopes.escape(scope, outer, h);
        }
    }

    /** {@code norm} in training or evaluation mode as the forward pass is. */
    private static Tensor normalise(MultiNodeBatchNorm norm, Tensor h, boolean training) {
        if (norm.is_training() != training) {
            norm.train(training);
        }
        return norm.forward(h);
    }
}
