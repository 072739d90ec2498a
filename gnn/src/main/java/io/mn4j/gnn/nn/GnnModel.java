package io.mn4j.gnn.nn;

import io.mn4j.gnn.sampling.Block;
import io.mn4j.gnn.shard.GraphShardManager;
import io.mn4j.tensor.Scopes;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.BiFunction;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * A stack of graph layers of one kind: dropout, layer, activation, ..., dropout, last layer (raw
 * class scores). GCN and SAGE use ReLU; GAT uses ELU with {@code heads} heads in hidden layers and
 * one head in the last (as PyG's Cora examples).
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
        this.dropout = dropout;
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

    /** Class scores of this rank's nodes, [numLocal, out]. */
    public Tensor forward(GraphShardManager graph, Tensor x, boolean training) {
        return stack(x, training, (i, h) -> {
            Module layer = layers.get(i);
            if (layer instanceof GCNConv gcn) {
                return gcn.forward(graph, h);
            } else if (layer instanceof SAGEConv sage) {
                return sage.forward(graph, h);
            }
            return ((GATConv) layer).forward(graph, h);
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
        return stack(x, training, (i, h) -> ((SAGEConv) layers.get(i)).forward(blocks.get(i), h));
    }

    /** Dropout, layer i, activation, for every layer; the last without activation. */
    private Tensor stack(Tensor x, boolean training, BiFunction<Integer, Tensor, Tensor> layer) {
        // Activations' handles go with this call: autograd's references alone keep them, so backward
        // frees each once it has used it, not when the caller's scope closes.
        PointerScope outer = PointerScope.getInnerScope();
        try (PointerScope scope = new PointerScope()) {
            Tensor h = x;
            for (int i = 0; i < layers.size(); i++) {
                h = layer.apply(i, Dropout.apply(h, dropout, training));
                if (i < layers.size() - 1) {
                    // ELU in place: autograd then keeps its output (the next layer's input, kept anyway)
                    // instead of its input as well. ReLU keeps its output either way.
                    h = kind == Kind.GAT ? torch.elu_(h) : torch.relu(h);
                }
            }
            return Scopes.escape(scope, outer, h);
        }
    }
}
