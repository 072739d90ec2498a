package io.mn4j.gnn.train;

import io.mn4j.iterators.EpochStats;
import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.ReduceOp;
import io.mn4j.gnn.shard.GraphShardManager;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.nn.GnnModel;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptional;
import org.bytedeco.pytorch.global.torch;

/**
 * Trains a model full-graph on a partitioned graph, one step per epoch. The loss of each rank is
 * the cross-entropy summed over its training nodes divided by the number of training nodes of the
 * whole graph, so that the gradients summed over ranks are those of the one-process mean loss.
 * Nodes without a label ({@link Graph#UNLABELLED}) count in no loss and no accuracy, whatever
 * their masks say. Collective: every rank calls the same methods in the same order.
 */
public final class FullGraphTrainer implements Trainer {
    private final Communicator comm;
    private final GraphShardManager graph;
    private final GnnModel model;
    private final Optimizer optimizer;
    private final LocalNodes nodes;
    private final Splits splits;
    private int epoch;

    public FullGraphTrainer(Communicator comm, GraphShardManager graph, GnnModel model, Optimizer optimizer,
            LocalNodes nodes) {
        this.comm = comm;
        this.graph = graph;
        this.model = model;
        this.optimizer = optimizer;
        this.nodes = nodes;
        this.splits = new Splits(comm, nodes, model.outputs());
        comm.bcastData(model, 0);
    }

    /** One optimisation step on the whole graph, then an evaluation of every split. */
    @Override
    public EpochStats epoch() {
        long t0 = System.nanoTime();
        long bytes0 = comm.stats().totalBytesSent() + graph.communicator().stats().totalBytesSent();
        double totalLoss = trainEpoch();
        double[] acc = evaluate();
        double seconds = (System.nanoTime() - t0) / 1e9;
        long bytes = comm.stats().totalBytesSent() + graph.communicator().stats().totalBytesSent() - bytes0;
        return new EpochStats(++epoch, totalLoss, acc[0], acc[1], acc[3], Double.NaN, acc[2], seconds, Double.NaN, bytes);
    }

    /**
     * One optimisation step on the whole graph, without evaluation: forward, the loss (each rank's
     * share of the mean over all training nodes), backward, gradient sum, step. Returns the loss.
     */
    @Override
    public double trainEpoch() {
        model.train(true);
        graph.nextEpoch();
        optimizer.zero_grad();
        Tensor out = model.forward(graph, nodes.features(), true);
        Tensor logp = torch.log_softmax(out.index_select(0, splits.trainIdx), 1);
        Tensor loss = torch.nll_loss(logp, nodes.labels().index_select(0, splits.trainIdx), new TensorOptional(), 2, Graph.UNLABELLED)
                .div(new Scalar(splits.globalTrain));
        loss.backward();
        comm.sumGrad(model); // each rank's loss is its share of the mean: the gradient is their sum
        optimizer.step();
        return comm.allreduce(loss.detach().to(torch.ScalarType.Double), ReduceOp.SUM).item_double();
    }

    @Override
    public int epochsDone() {
        return epoch;
    }

    @Override
    public void resumeAfter(int epochs) {
        epoch = Trainer.epochsDone(epochs);
    }

    @Override
    public double[] evaluate() {
        return splits.accuracy(model, graph);
    }
}
