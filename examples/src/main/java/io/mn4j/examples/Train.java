package io.mn4j.examples;

import io.mn4j.checkpoint.ModelExport;
import io.mn4j.communicator.Communicator;
import io.mn4j.examples.support.Cli;
import io.mn4j.examples.support.CheckpointOptions;
import io.mn4j.examples.support.CommonOptions;
import io.mn4j.examples.support.ExportOptions;
import io.mn4j.iterators.EpochStats;
import io.mn4j.examples.support.Memory;
import io.mn4j.examples.support.Mlp;
import io.mn4j.examples.support.RunOutput;
import io.mn4j.examples.support.TrainingCheckpoints;
import io.mn4j.examples.support.TrainingLoop;
import io.mn4j.functions.Functions;
import io.mn4j.iterators.Batch;
import io.mn4j.iterators.Datasets;
import io.mn4j.iterators.FashionMnist;
import io.mn4j.iterators.Metrics;
import io.mn4j.iterators.MultiNodeEvaluator;
import io.mn4j.iterators.MultiNodeIterator;
import io.mn4j.iterators.TensorDataset;
import java.io.PrintStream;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.bytedeco.pytorch.Adam;
import org.bytedeco.pytorch.AdamOptions;
import org.bytedeco.pytorch.LongOptional;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * The main job: an MLP cut into one stage per rank (model parallelism, ChainerMN's first
 * model-parallel example generalised to N ranks), trained on Fashion-MNIST.
 *
 * <p>Rank 0 reads the data and a {@link MultiNodeIterator} hands every rank the same batches and
 * epoch state. Activations travel along a ring: rank 0 runs the first stage and sends its output
 * to rank 1, each rank runs its stage and sends on, and the last rank sends the logits back to
 * rank 0, which computes the loss. Backward runs the ring in reverse through the differentiable
 * {@link Functions#send}/{@link Functions#recv}: rank 0 calls {@code backward()} on the loss, the
 * other ranks on the delegate their send returned. With one rank the whole MLP runs on it. Layer
 * {@code i} starts from the same weights whatever the number of ranks, so runs with 1, 2 or 4 ranks
 * and the same seed compute the same losses.
 */
@Command(name = "Train", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Model-parallel MLP on Fashion-MNIST: the layers are split over the ranks of the job.", ""},
        footer = {"", "Examples:",
            "  scripts/mn4j-run -np 2 io.mn4j.examples.Train",
            "  scripts/mn4j-run -np 4 io.mn4j.examples.Train --epochs 3 --hidden 512,256,128",
            "", "Writes <out>/epochs.csv (one line per epoch) and <out>/curves.png."})
public final class Train implements Callable<Integer> {
    /** Forward activations from rank r travel with tag FORWARD + r. */
    static final int FORWARD = 100;
    /** Evaluation activations (plain messages, no autograd) from rank r use tag EVAL + r. */
    static final int EVAL = 200;

    @Mixin
    CommonOptions opts = new CommonOptions();

    @Mixin
    CheckpointOptions checkpoint = new CheckpointOptions();

    @Mixin
    ExportOptions export = new ExportOptions();

    public static void main(String[] args) {
        Cli.main(new Train(), args);
    }

    @Override
    public Integer call() {
        opts.validate();
        checkpoint.validate(true);
        export.validate(true, checkpoint.resume);
        Communicator.run(this::run);
        return 0;
    }

    /** The training job on one rank; returns the per-epoch numbers (the same on every rank). */
    List<EpochStats> run(Communicator comm) throws Exception {
        int n = comm.size();
        int rank = comm.rank();
        PrintStream out = System.out;
        Mlp mlp = Mlp.of(FashionMnist.PIXELS, opts.hidden, FashionMnist.CLASSES);
        int[][] split = mlp.split(n);
        Mlp.Stage stage = mlp.stage(split[rank][0], split[rank][1], opts.seed);
        Adam adam = new Adam(stage.parameters(), new AdamOptions(opts.lr));

        TensorDataset train = Datasets.loadOnRank(comm, 0, () -> opts.load(true));
        TensorDataset test = Datasets.loadOnRank(comm, 0, () -> opts.load(false));
        MultiNodeIterator trainIt = MultiNodeIterator.over(train, opts.batchSize, true, true, opts.seed, comm, 0);

        List<Long> params = comm.allgatherObj(stage.parameterCount());
        RunOutput output = null;
        if (rank == 0) {
            out.printf("Train: MLP %s on Fashion-MNIST, model parallel over %s%n", mlp.describe(), Cli.ranks(n));
            for (int r = 0; r < n; r++) {
                out.printf("  rank %d: layers [%d, %d), %,d parameters%n", r, split[r][0], split[r][1], params.get(r));
            }
            out.printf("  data: %d training / %d test examples from %s; batch %d, Adam lr %g (%s), seed %d, %d epochs%n",
                    train.size(), test.size(), opts.dataDir(), opts.batchSize, opts.lr, opts.schedule, opts.seed,
                    opts.epochs);
            output = new RunOutput(opts.outDir("train"), "Train (" + Cli.ranks(n) + ")");
        }
        if (export.initialize(comm, stage, () -> ExportOptions.testResult(evaluate(comm, stage, test, opts.evalBatchSize)),
                rank == 0 ? out : null)) {
            return List.of();
        }
        TrainingCheckpoints checkpoints = TrainingCheckpoints.open(comm, checkpoint, opts.identity("Train", n),
                w -> w.module("stage", stage).optimizer("adam", adam), r -> {
                    r.module("stage", stage);
                    r.optimizer("adam", adam);
                }, rank == 0 ? out : null);
        long t0 = System.nanoTime();
        TrainingLoop loop = new TrainingLoop(comm, opts, out, output);
        List<EpochStats> epochs = loop.run(trainIt,
                (batch, sink) -> step(comm, stage, adam, batch, sink),
                () -> evaluate(comm, stage, test, opts.evalBatchSize),
                lr -> adam.param_groups().get(0).options().set_lr(lr), checkpoints);
        double total = (System.nanoTime() - t0) / 1e9;
        export.export(comm, stage, ModelExport.Layout.GATHERED, rank == 0 ? out : null);
        if (rank == 0) {
            EpochStats last = epochs.get(epochs.size() - 1);
            out.printf("final test accuracy %.2f%% (loss %.4f) after %d epochs, %.1f s training+evaluation, peak RSS %s%n",
                    last.testAccuracy() * 100, last.testLoss(), epochs.size(), total, Memory.mib(Memory.peakRssBytes()));
            if (!opts.noPlot) {
                output.writeCurves();
                out.println("curves: " + output.png());
            }
            out.println("per-epoch numbers: " + output.csv());
        }
        return epochs;
    }

    /** One training step of this rank's stage. */
    static void step(Communicator comm, Mlp.Stage stage, Adam adam, Batch batch, Metrics sink) {
        int n = comm.size();
        int rank = comm.rank();
        adam.zero_grad();
        if (rank == 0) {
            Tensor x = batch.field(0);
            Tensor labels = batch.field(1);
            Tensor logits;
            if (n == 1) {
                logits = stage.forward(x);
            } else {
                Tensor phi = Functions.send(stage.forward(x), comm, 1, FORWARD);
                logits = Functions.recv(comm, n - 1, FORWARD + n - 1, phi);
            }
            Tensor loss = torch.nll_loss(torch.log_softmax(logits, 1), labels);
            loss.backward();
            adam.step();
            sink.addMean("loss", loss.item_double(), batch.size());
            sink.addMean("accuracy", correct(logits, labels) / (double) batch.size(), batch.size());
        } else {
            Tensor z = Functions.recv(comm, rank - 1, FORWARD + rank - 1);
            Tensor phi = Functions.send(stage.forward(z), comm, (rank + 1) % n, FORWARD + rank);
            phi.backward();
            adam.step();
        }
    }

    /** Loss and accuracy on the test set, through the same ring without autograd. */
    static Metrics evaluate(Communicator comm, Mlp.Stage stage, TensorDataset testAtRank0, int batchSize) {
        int n = comm.size();
        int rank = comm.rank();
        MultiNodeIterator it = MultiNodeIterator.over(testAtRank0,
                testAtRank0 == null ? 1 : (int) Math.min(batchSize, testAtRank0.size()), false, false, 0, comm, 0);
        try (NoGradGuard noGrad = new NoGradGuard()) {
            return MultiNodeEvaluator.evaluate(comm, it, batch -> {
                if (rank == 0) {
                    Tensor logits = stage.forward(batch.field(0));
                    if (n > 1) {
                        comm.send(logits, 1, EVAL);
                        logits = comm.recv(n - 1, EVAL + n - 1);
                    }
                    Tensor labels = batch.field(1);
                    double loss = torch.nll_loss(torch.log_softmax(logits, 1), labels).item_double();
                    return Map.of("loss", loss, "accuracy", correct(logits, labels) / (double) batch.size());
                }
                Tensor h = stage.forward(comm.recv(rank - 1, EVAL + rank - 1));
                comm.send(h, (rank + 1) % n, EVAL + rank);
                return Map.of();
            });
        }
    }

    /** Number of rows whose largest logit is at the label. */
    static long correct(Tensor logits, Tensor labels) {
        return logits.argmax(new LongOptional(1), false).eq(labels).sum().item_long();
    }
}
