package io.mn4j.examples;

import io.mn4j.communicator.Communicator;
import io.mn4j.examples.support.Cli;
import io.mn4j.examples.support.CommonOptions;
import io.mn4j.iterators.EpochStats;
import io.mn4j.examples.support.Mlp;
import io.mn4j.examples.support.RunOutput;
import io.mn4j.examples.support.TrainingLoop;
import io.mn4j.functions.Functions;
import io.mn4j.functions.MultiNodeOptimizer;
import io.mn4j.iterators.Dataset;
import io.mn4j.iterators.Datasets;
import io.mn4j.iterators.FashionMnist;
import io.mn4j.iterators.Metrics;
import io.mn4j.iterators.MultiNodeEvaluator;
import io.mn4j.iterators.SerialIterator;
import io.mn4j.iterators.TensorDataset;
import java.io.PrintStream;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.bytedeco.pytorch.Adam;
import org.bytedeco.pytorch.AdamOptions;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * "Dual parallel": model parallelism inside pairs of ranks, data parallelism across the pairs,
 * built with two {@code split}s of the world communicator. Ranks 2p and 2p+1 form pair p and hold
 * the two stages of one MLP (the pair's "leader" 2p runs the first stage and computes the loss,
 * the "follower" 2p+1 runs the second); the ranks that hold the same stage in every pair form a
 * data-parallel group whose {@link MultiNodeOptimizer} averages that stage's gradients.
 *
 * <p>Only the leaders have data: {@link Datasets#scatterDataset} over the leaders' communicator
 * gives every pair its part, and each follower iterates over an empty data set of the same length
 * ({@link Datasets#createEmptyDataset}'s pattern), so both ranks of a pair step through the same
 * number of iterations and epochs. Needs an even number of ranks.
 */
@Command(name = "TrainDualParallel", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Model parallel within pairs of ranks, data parallel across pairs (uses Communicator.split).", ""},
        footer = {"", "Example:", "  scripts/mn4j-run -np 4 io.mn4j.examples.TrainDualParallel --epochs 5"})
public final class TrainDualParallel implements Callable<Integer> {
    static final int TO_FOLLOWER = 300;
    static final int TO_LEADER = 301;
    static final int EVAL_TO_FOLLOWER = 310;
    static final int EVAL_TO_LEADER = 311;

    @Mixin
    CommonOptions opts = new CommonOptions();

    public static void main(String[] args) {
        Cli.main(new TrainDualParallel(), args);
    }

    @Override
    public Integer call() {
        opts.validate();
        if (Cli.launchSize() % 2 != 0) {
            throw new IllegalArgumentException("TrainDualParallel needs an even number of ranks (pairs), got " + Cli.launchSize());
        }
        Communicator.run(this::run);
        return 0;
    }

    List<EpochStats> run(Communicator world) throws Exception {
        if (world.size() % 2 != 0) {
            throw new IllegalArgumentException("TrainDualParallel needs an even number of ranks (pairs), got "
                    + world.size());
        }
        PrintStream out = System.out;
        int pairs = world.size() / 2;
        int pair = world.rank() / 2;
        boolean leader = world.rank() % 2 == 0;
        try (Communicator pairComm = world.split(pair, world.rank());
                Communicator stageComm = world.split(leader ? 0 : 1, world.rank())) {
            Mlp mlp = Mlp.of(FashionMnist.PIXELS, opts.hidden, FashionMnist.CLASSES);
            int[][] split = mlp.split(2);
            int pos = leader ? 0 : 1;
            Mlp.Stage stage = mlp.stage(split[pos][0], split[pos][1], opts.seed);
            Adam adam = new Adam(stage.parameters(), new AdamOptions(opts.lr));
            MultiNodeOptimizer optimizer = new MultiNodeOptimizer(adam, stage, stageComm);
            optimizer.syncParameters();

            TensorDataset train = Datasets.loadOnRank(world, 0, () -> opts.load(true));
            TensorDataset test = Datasets.loadOnRank(world, 0, () -> opts.load(false));
            Dataset<?> trainPart;
            Dataset<?> testPart;
            if (leader) {
                trainPart = Datasets.scatterDataset(train, stageComm, 0, true, opts.seed, true);
                testPart = Datasets.scatterDataset(test, stageComm, 0, false, 0, false);
                pairComm.bcastObj(new long[] {trainPart.size(), testPart.size()}, 0);
            } else {
                long[] sizes = pairComm.bcastObj(null, 0);
                trainPart = TensorDataset.empty(sizes[0]);
                testPart = TensorDataset.empty(sizes[1]);
            }
            train = null;
            test = null;
            SerialIterator it = new SerialIterator(trainPart, opts.batchSize, true, leader, opts.seed + pair);

            RunOutput output = null;
            if (world.rank() == 0) {
                out.printf("TrainDualParallel: %d pair%s; in each pair rank 2p holds layers [%d, %d), rank 2p+1 layers [%d, %d);"
                        + " %d training examples per pair, batch %d per pair%n", pairs, pairs == 1 ? "" : "s",
                        split[0][0], split[0][1], split[1][0], split[1][1], trainPart.size(), opts.batchSize);
                output = new RunOutput(opts.outDir("train-dual-parallel"), "TrainDualParallel (" + pairs + " pairs)");
            }
            List<EpochStats> epochs = new TrainingLoop(world, opts, out, output).run(it,
                    (batch, sink) -> {
                        optimizer.zeroGrad();
                        if (leader) {
                            Tensor phi = Functions.send(stage.forward(batch.field(0)), pairComm, 1, TO_FOLLOWER);
                            Tensor logits = Functions.recv(pairComm, 1, TO_LEADER, phi);
                            Tensor loss = torch.nll_loss(torch.log_softmax(logits, 1), batch.field(1));
                            loss.backward();
                            sink.addMean("loss", loss.item_double(), batch.size());
                            sink.addMean("accuracy", Train.correct(logits, batch.field(1)) / (double) batch.size(),
                                    batch.size());
                        } else {
                            Tensor z = Functions.recv(pairComm, 0, TO_FOLLOWER);
                            Functions.send(stage.forward(z), pairComm, 0, TO_LEADER).backward();
                        }
                        optimizer.step();
                    },
                    () -> evaluate(world, pairComm, leader, stage, testPart, opts.evalBatchSize),
                    lr -> adam.param_groups().get(0).options().set_lr(lr));
            if (world.rank() == 0) {
                EpochStats last = epochs.get(epochs.size() - 1);
                out.printf("final test accuracy %.2f%% after %d epochs%n", last.testAccuracy() * 100, epochs.size());
                if (!opts.noPlot) {
                    output.writeCurves();
                    out.println("curves: " + output.png());
                }
            }
            return epochs;
        }
    }

    /** Each pair evaluates its leader's part of the test set through its two stages. */
    static Metrics evaluate(Communicator world, Communicator pairComm, boolean leader, Mlp.Stage stage,
            Dataset<?> testPart, int batchSize) {
        try (NoGradGuard noGrad = new NoGradGuard()) {
            return MultiNodeEvaluator.evaluate(world, testPart, batchSize, batch -> {
                if (leader) {
                    pairComm.send(stage.forward(batch.field(0)), 1, EVAL_TO_FOLLOWER);
                    Tensor logits = pairComm.recv(1, EVAL_TO_LEADER);
                    Tensor labels = batch.field(1);
                    return Map.of("loss", torch.nll_loss(torch.log_softmax(logits, 1), labels).item_double(),
                            "accuracy", Train.correct(logits, labels) / (double) batch.size());
                }
                pairComm.send(stage.forward(pairComm.recv(0, EVAL_TO_FOLLOWER)), 0, EVAL_TO_LEADER);
                return Map.of();
            });
        }
    }
}
