package io.mn4j.examples;

import io.mn4j.communicator.Communicator;
import io.mn4j.examples.support.Cli;
import io.mn4j.examples.support.CommonOptions;
import io.mn4j.iterators.EpochStats;
import io.mn4j.examples.support.Mlp;
import io.mn4j.examples.support.RunOutput;
import io.mn4j.examples.support.TrainingLoop;
import io.mn4j.functions.Functions;
import io.mn4j.iterators.Datasets;
import io.mn4j.iterators.FashionMnist;
import io.mn4j.iterators.Metrics;
import io.mn4j.iterators.MultiNodeEvaluator;
import io.mn4j.iterators.SynchronizedIterator;
import io.mn4j.iterators.TensorDataset;
import java.io.PrintStream;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.bytedeco.pytorch.Adam;
import org.bytedeco.pytorch.AdamOptions;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * An averaging ensemble, the seed's "Example 2": every rank holds its own MLP (its own initial
 * weights), all ranks see the same batches (each reads the data itself, and a
 * {@link SynchronizedIterator} shuffles them identically from rank 0's seed), and the ensemble's
 * output is the mean of the members' logits, gathered with the differentiable
 * {@link Functions#allgather}. The loss is that of the ensemble, so its backward (a
 * reduce-scatter) trains every member for the ensemble. After each epoch the test accuracy of the
 * ensemble and of every member alone are printed.
 */
@Command(name = "TrainEnsemble", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Averaging ensemble of MLPs, one per rank, combined with a differentiable allgather.", ""},
        footer = {"", "Example:", "  scripts/mn4j-run -np 2 io.mn4j.examples.TrainEnsemble --epochs 5"})
public final class TrainEnsemble implements Callable<Integer> {
    @Mixin
    CommonOptions opts = new CommonOptions();

    public static void main(String[] args) {
        Cli.main(new TrainEnsemble(), args);
    }

    @Override
    public Integer call() {
        opts.validate();
        Communicator.run(this::run);
        return 0;
    }

    /** The mean of every rank's logits, differentiable with respect to this rank's. */
    static Tensor ensembleLogits(Communicator comm, Tensor logits) {
        List<Tensor> all = Functions.allgather(comm, logits);
        return torch.stack(new TensorVector(all.toArray(new Tensor[0])), 0).mean(0L);
    }

    List<EpochStats> run(Communicator comm) throws Exception {
        int n = comm.size();
        int rank = comm.rank();
        PrintStream out = System.out;
        Mlp mlp = Mlp.of(FashionMnist.PIXELS, opts.hidden, FashionMnist.CLASSES);
        Mlp.Stage member = mlp.stage(0, mlp.layers(), opts.seed * 7919 + rank);
        Adam adam = new Adam(member.parameters(), new AdamOptions(opts.lr));
        TensorDataset train = Datasets.loadEverywhere(comm, () -> opts.load(true));
        TensorDataset test = Datasets.loadEverywhere(comm, () -> opts.load(false));
        SynchronizedIterator it = SynchronizedIterator.create(train, opts.batchSize, true, opts.seed, comm);

        RunOutput output = null;
        if (rank == 0) {
            out.printf("TrainEnsemble: %d MLPs (one per rank), outputs averaged with allgather; %d training examples%n",
                    n, train.size());
            output = new RunOutput(opts.outDir("train-ensemble"), "TrainEnsemble (" + n + " members)");
        }
        List<EpochStats> epochs = new TrainingLoop(comm, opts, out, output).run(it,
                (batch, sink) -> {
                    adam.zero_grad();
                    Tensor avg = ensembleLogits(comm, member.forward(batch.field(0)));
                    Tensor loss = torch.nll_loss(torch.log_softmax(avg, 1), batch.field(1));
                    // every rank holds the same loss; the allgather's backward sums the ranks'
                    // gradients, so 1/n keeps each member's gradient that of the ensemble loss
                    loss.div(new Scalar((double) n)).backward();
                    adam.step();
                    if (rank == 0) {
                        sink.addMean("loss", loss.item_double(), batch.size());
                        sink.addMean("accuracy", Train.correct(avg, batch.field(1)) / (double) batch.size(),
                                batch.size());
                    }
                },
                () -> {
                    Metrics m = evaluate(comm, member, test, opts.evalBatchSize);
                    if (rank == 0) {
                        StringBuilder sb = new StringBuilder("          members alone: ");
                        for (int r = 0; r < n; r++) {
                            sb.append(String.format("rank %d %.2f%%  ", r, m.mean("member " + r + " accuracy") * 100));
                        }
                        out.println(sb.toString().stripTrailing());
                    }
                    return m;
                },
                lr -> adam.param_groups().get(0).options().set_lr(lr));
        if (rank == 0) {
            EpochStats last = epochs.get(epochs.size() - 1);
            out.printf("final ensemble test accuracy %.2f%% after %d epochs%n", last.testAccuracy() * 100, epochs.size());
            if (!opts.noPlot) {
                output.writeCurves();
                out.println("curves: " + output.png());
            }
        }
        return epochs;
    }

    /** Ensemble loss and accuracy (counted once, on rank 0), and every member's own accuracy. */
    static Metrics evaluate(Communicator comm, Mlp.Stage member, TensorDataset test, int batchSize) {
        try (NoGradGuard noGrad = new NoGradGuard()) {
            // every rank walks its own copy of the test set in the same order: the batches match
            return MultiNodeEvaluator.evaluate(comm, test, batchSize, batch -> {
                Tensor mine = member.forward(batch.field(0));
                Tensor labels = batch.field(1);
                List<Tensor> all = comm.allgather(mine);
                Tensor avg = torch.stack(new TensorVector(all.toArray(new Tensor[0])), 0).mean(0L);
                Map<String, Double> m = new HashMap<>();
                m.put("member " + comm.rank() + " accuracy", Train.correct(mine, labels) / (double) batch.size());
                if (comm.rank() == 0) {
                    m.put("loss", torch.nll_loss(torch.log_softmax(avg, 1), labels).item_double());
                    m.put("accuracy", Train.correct(avg, labels) / (double) batch.size());
                }
                return m;
            });
        }
    }
}
