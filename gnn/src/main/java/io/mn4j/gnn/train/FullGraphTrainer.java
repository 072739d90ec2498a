package io.mn4j.gnn.train;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.ReduceOp;
import io.mn4j.gnn.dist.GraphShardManager;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.nn.GnnModel;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptional;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * Trains a model full-graph on a partitioned graph, one step per epoch. The loss of each rank is
 * the cross-entropy summed over its training nodes divided by the number of training nodes of the
 * whole graph, so that the gradients summed over ranks are those of the one-process mean loss.
 * Nodes without a label ({@link Graph#UNLABELLED}) count in no loss and no accuracy, whatever
 * their masks say. Collective: every rank calls the same methods in the same order.
 */
public final class FullGraphTrainer {
    private final Communicator comm;
    private final GraphShardManager graph;
    private final GnnModel model;
    private final Optimizer optimizer;
    private final LocalNodes nodes;
    /** The masks of the train, val and test nodes, less the nodes without a label. */
    private final Tensor[] splits;
    private final Tensor trainIdx;
    private final double globalTrain;
    private int epoch;

    public FullGraphTrainer(Communicator comm, GraphShardManager graph, GnnModel model, Optimizer optimizer,
            LocalNodes nodes) {
        this.comm = comm;
        this.graph = graph;
        this.model = model;
        this.optimizer = optimizer;
        this.nodes = nodes;
        Tensor labelled = nodes.labels().ne(new Scalar(Graph.UNLABELLED));
        this.splits = new Tensor[] {nodes.train().logical_and(labelled), nodes.val().logical_and(labelled),
                nodes.test().logical_and(labelled)};
        this.trainIdx = splits[0].nonzero().squeeze(1);
        this.globalTrain = comm.allreduce(torch.scalar_tensor(new Scalar(trainIdx.size(0))).to(torch.ScalarType.Double),
                ReduceOp.SUM).item_double();
        if (globalTrain == 0) {
            throw new IllegalArgumentException("no partition has a training node with a label");
        }
        comm.bcastData(model, 0);
    }

    /** One optimisation step on the whole graph, then an evaluation of every split. */
    public EpochStats epoch() {
        long t0 = System.nanoTime();
        long bytes0 = comm.stats().totalBytesSent() + graph.communicator().stats().totalBytesSent();
        model.train(true);
        graph.nextEpoch();
        optimizer.zero_grad();
        Tensor out = model.forward(graph, nodes.features(), true);
        Tensor logp = torch.log_softmax(out.index_select(0, trainIdx), 1);
        Tensor loss = torch.nll_loss(logp, nodes.labels().index_select(0, trainIdx), new TensorOptional(), 2, Graph.UNLABELLED)
                .div(new Scalar(globalTrain));
        loss.backward();
        sumGradients();
        optimizer.step();
        double totalLoss = comm.allreduce(loss.detach().to(torch.ScalarType.Double), ReduceOp.SUM).item_double();
        double[] acc = evaluate();
        double seconds = (System.nanoTime() - t0) / 1e9;
        long bytes = comm.stats().totalBytesSent() + graph.communicator().stats().totalBytesSent() - bytes0;
        return new EpochStats(++epoch, totalLoss, acc[0], acc[1], acc[2], seconds, bytes);
    }

    /** Accuracy on the train, val and test nodes of all partitions (no dropout, no autograd). */
    public double[] evaluate() {
        model.train(false);
        try (NoGradGuard g = new NoGradGuard()) {
            Tensor pred = model.forward(graph, nodes.features(), false).argmax(new org.bytedeco.pytorch.LongOptional(1), false);
            Tensor correct = pred.eq(nodes.labels());
            Tensor counts = torch.zeros(new long[] {6}, new org.bytedeco.pytorch.TensorOptions(torch.ScalarType.Long));
            for (int i = 0; i < 3; i++) {
                counts.get(2 * i).fill_(new Scalar(correct.logical_and(splits[i]).sum().item_long()));
                counts.get(2 * i + 1).fill_(new Scalar(splits[i].sum().item_long()));
            }
            Tensor total = comm.allreduce(counts, ReduceOp.SUM);
            double[] acc = new double[3];
            for (int i = 0; i < 3; i++) {
                long n = total.get(2 * i + 1).item_long();
                acc[i] = n == 0 ? Double.NaN : (double) total.get(2 * i).item_long() / n;
            }
            return acc;
        }
    }

    /** Each rank's gradient is of its share of the loss: the model's gradient is their sum. */
    private void sumGradients() {
        comm.meanGrad(model);
        TensorVector params = model.parameters();
        try (NoGradGuard g = new NoGradGuard()) {
            for (long i = 0; i < params.size(); i++) {
                Tensor grad = params.get(i).grad();
                if (grad.defined()) {
                    grad.mul_(new Scalar((double) comm.size()));
                }
            }
        }
    }
}
