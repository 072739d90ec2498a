package io.mn4j.gnn.train;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.ReduceOp;
import io.mn4j.gnn.shard.GraphShardManager;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.nn.GnnModel;
import io.mn4j.communicator.Agreement;
import io.mn4j.tensor.Tensors;
import java.util.Arrays;
import org.bytedeco.pytorch.LongOptional;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptional;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/**
 * The train, val and test nodes of one rank, less the nodes without a label
 * ({@link Graph#UNLABELLED}, which count in no loss and no accuracy whatever their masks say), and
 * what the trainers share: the training nodes of every rank and full-graph evaluation.
 */
final class Splits {
    private final Communicator comm;
    private final LocalNodes nodes;
    private final Tensor[] masks;
    /** This rank's labelled training nodes, as local indices. */
    final Tensor trainIdx;
    /** Labelled training nodes of each rank. */
    final long[] trainPerRank;
    /** Labelled training nodes of all ranks. */
    final double globalTrain;

    /**
     * Collective (counts the training nodes of every rank).
     *
     * @param classes the model's outputs: labels must lie in {@code [0, classes)} unless unlabelled
     * @throws io.mn4j.communicator.JobInputException on every rank when any rank's nodes are
     *     inconsistent (rows of features, labels and masks) or have a label out of range, naming
     *     the rank; a label the loss could not take would otherwise fail on that rank alone and
     *     leave the others waiting in the gradient sum
     */
    Splits(Communicator comm, LocalNodes nodes, long classes) {
        Agreement.agree(comm, "checking the training nodes", () -> {
            check(nodes, classes);
            return null;
        });
        this.comm = comm;
        this.nodes = nodes;
        Tensor labelled = nodes.labels().ne(new Scalar(Graph.UNLABELLED));
        this.masks = new Tensor[] {nodes.train().logical_and(labelled), nodes.val().logical_and(labelled),
                nodes.test().logical_and(labelled)};
        this.trainIdx = masks[0].nonzero().squeeze(1);
        this.trainPerRank = comm.allgatherObj(trainIdx.size(0)).stream().mapToLong(Long::longValue).toArray();
        this.globalTrain = Arrays.stream(trainPerRank).sum();
        if (globalTrain == 0) {
            throw new IllegalArgumentException("no partition has a training node with a label");
        }
    }

    private static void check(LocalNodes nodes, long classes) {
        long n = nodes.features().dim() == 2 ? nodes.features().size(0) : -1;
        for (Tensor t : new Tensor[] {nodes.labels(), nodes.train(), nodes.val(), nodes.test()}) {
            if (n < 0 || t.dim() != 1 || t.size(0) != n) {
                throw new IllegalArgumentException("features, labels and masks must hold one row per node, got features "
                        + Tensors.shapeString(nodes.features()) + ", labels " + Tensors.shapeString(nodes.labels()) + ", masks "
                        + Tensors.shapeString(nodes.train()) + " " + Tensors.shapeString(nodes.val()) + " "
                        + Tensors.shapeString(nodes.test()));
            }
        }
        Tensor labels = nodes.labels();
        Tensor bad = labels.ne(new Scalar(Graph.UNLABELLED)).logical_and(labels.lt(new Scalar(0)).logical_or(labels.ge(new Scalar(classes))));
        if (bad.any().item_bool()) {
            long at = bad.nonzero().get(0).item_long();
            throw new IllegalArgumentException("node " + at + " (local) has label " + labels.get(at).item_long() + ", outside the model's "
                    + classes + " classes (" + Graph.UNLABELLED + ": unlabelled)");
        }
    }

    /**
     * Accuracy of {@code model} on the train, val and test nodes of all partitions, then the mean
     * cross-entropy on the val nodes, full-graph on {@code graph}; NaN for a split without nodes.
     * Collective.
     */
    double[] accuracy(GnnModel model, GraphShardManager graph) {
        model.train(false);
        try (NoGradGuard g = new NoGradGuard()) {
            Tensor out = model.forward(graph, nodes.features(), false);
            Tensor correct = out.argmax(new LongOptional(1), false).eq(nodes.labels());
            // Counts as doubles (exact below 2^53) beside the loss: one all-reduce for everything.
            Tensor sums = torch.zeros(new long[] {7}, new TensorOptions(torch.ScalarType.Double));
            for (int i = 0; i < 3; i++) {
                sums.get(2 * i).fill_(new Scalar((double) correct.logical_and(masks[i]).sum().item_long()));
                sums.get(2 * i + 1).fill_(new Scalar((double) masks[i].sum().item_long()));
            }
            Tensor valIdx = masks[1].nonzero().squeeze(1);
            if (valIdx.size(0) > 0) {
                Tensor logp = torch.log_softmax(out.index_select(0, valIdx).to(torch.ScalarType.Double), 1);
                sums.get(6).fill_(new Scalar(torch.nll_loss(logp, nodes.labels().index_select(0, valIdx), new TensorOptional(), 2,
                        Graph.UNLABELLED).item_double()));
            }
            Tensor total = comm.allreduce(sums, ReduceOp.SUM);
            double[] scores = new double[4];
            for (int i = 0; i < 3; i++) {
                double n = total.get(2 * i + 1).item_double();
                scores[i] = n == 0 ? Double.NaN : total.get(2 * i).item_double() / n;
            }
            double valNodes = total.get(3).item_double();
            scores[3] = valNodes == 0 ? Double.NaN : total.get(6).item_double() / valNodes;
            return scores;
        }
    }

}
