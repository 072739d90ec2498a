package io.mn4j.examples;

import io.mn4j.checkpoint.ModelExport;
import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.GradReduction;
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
import io.mn4j.functions.MultiNodeOptimizer;
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
import picocli.CommandLine.Option;

/**
 * Data parallelism, ChainerMN's classic set-up: rank 0 reads Fashion-MNIST and
 * {@link Datasets#scatterDataset} gives every rank its own shuffled part; every rank holds the
 * whole MLP and trains on its own mini-batches; a {@link MultiNodeOptimizer} averages the
 * gradients over the ranks before each update, so all replicas stay identical. The test set is
 * scattered too (disjoint parts) and {@link MultiNodeEvaluator} combines the parts' metrics by
 * sums and counts. With {@code -b B} each rank takes B examples per step (a global batch of
 * B x ranks), as in ChainerMN.
 */
@Command(name = "TrainDataParallel", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Data-parallel MLP on Fashion-MNIST: scatterDataset + MultiNodeOptimizer.", ""},
        footer = {"", "Examples:", "  scripts/mn4j-run -np 2 io.mn4j.examples.TrainDataParallel --epochs 5",
            "  scripts/cluster run --slots 2,2 io.mn4j.examples.TrainDataParallel \\",
            "      --grad-reduction hierarchical --grad-dtype bfloat16"})
public final class TrainDataParallel implements Callable<Integer> {
    @Mixin
    CommonOptions opts = new CommonOptions();

    @Mixin
    CheckpointOptions checkpoint = new CheckpointOptions();

    @Mixin
    ExportOptions export = new ExportOptions();

    @Option(names = "--grad-reduction", paramLabel = "ROUTE",
            description = "How gradients are averaged: flat (one allreduce) or hierarchical (within each host, among "
                    + "one leader per host, within each host again; default: ${DEFAULT-VALUE}).")
    String gradReduction = "flat";

    @Option(names = "--grad-dtype", paramLabel = "DTYPE",
            description = "Dtype of the gradients between hosts (flat: between ranks): float32, bfloat16 or float16 "
                    + "(default: ${DEFAULT-VALUE}).")
    String gradDtype = "float32";

    public static void main(String[] args) {
        Cli.main(new TrainDataParallel(), args);
    }

    @Override
    public Integer call() {
        opts.validate();
        checkpoint.validate(true);
        export.validate(false, checkpoint.resume);
        GradReduction.parse(gradReduction, gradDtype); // a bad value is a usage error before MPI starts
        Communicator.run(this::run);
        return 0;
    }

    List<EpochStats> run(Communicator comm) throws Exception {
        int n = comm.size();
        int rank = comm.rank();
        PrintStream out = System.out;
        Mlp mlp = Mlp.of(FashionMnist.PIXELS, opts.hidden, FashionMnist.CLASSES);
        Mlp.Stage model = mlp.stage(0, mlp.layers(), opts.seed);
        Adam adam = new Adam(model.parameters(), new AdamOptions(opts.lr));
        GradReduction reduction = GradReduction.parse(gradReduction, gradDtype);
        MultiNodeOptimizer optimizer = new MultiNodeOptimizer(adam, model, comm, reduction);
        optimizer.syncParameters();

        TensorDataset train = Datasets.loadOnRank(comm, 0, () -> opts.load(true));
        TensorDataset test = Datasets.loadOnRank(comm, 0, () -> opts.load(false));
        long trainSize = comm.bcastObj(train == null ? 0L : train.size(), 0);
        TensorDataset trainPart = Datasets.scatterDataset(train, comm, 0, true, opts.seed, true);
        TensorDataset testPart = Datasets.scatterDataset(test, comm, 0, false, 0, false);
        train = null; // only the parts are used from here on
        test = null;
        SerialIterator it = new SerialIterator(trainPart, opts.batchSize, true, true, opts.seed + rank);

        RunOutput output = null;
        if (rank == 0) {
            out.printf("TrainDataParallel: MLP %s on Fashion-MNIST, data parallel over %s%n", mlp.describe(), Cli.ranks(n));
            out.printf("  %d training examples scattered as %d per rank; batch %d per rank (%d per step in all); gradients %s over %d host(s)%n",
                    trainSize, trainPart.size(), opts.batchSize, opts.batchSize * n, reduction, comm.interSize());
            output = new RunOutput(opts.outDir("train-data-parallel"), "TrainDataParallel (" + Cli.ranks(n) + ")");
        }
        if (export.initialize(comm, model, () -> ExportOptions.testResult(evaluate(comm, model, testPart, opts.evalBatchSize)),
                rank == 0 ? out : null)) {
            return List.of();
        }
        TrainingCheckpoints checkpoints = TrainingCheckpoints.open(comm, checkpoint, opts.identity("TrainDataParallel", n),
                w -> w.replicatedModule("model", model).replicatedOptimizer("adam", adam), r -> {
                    r.replicatedModule("model", model);
                    r.replicatedOptimizer("adam", adam);
                }, rank == 0 ? out : null);
        long t0 = System.nanoTime();
        List<EpochStats> epochs = new TrainingLoop(comm, opts, out, output).run(it,
                (batch, sink) -> {
                    optimizer.zeroGrad();
                    Tensor logits = model.forward(batch.field(0));
                    Tensor loss = torch.nll_loss(torch.log_softmax(logits, 1), batch.field(1));
                    loss.backward();
                    optimizer.step();
                    sink.addMean("loss", loss.item_double(), batch.size());
                    sink.addMean("accuracy", Train.correct(logits, batch.field(1)) / (double) batch.size(), batch.size());
                },
                () -> evaluate(comm, model, testPart, opts.evalBatchSize),
                lr -> adam.param_groups().get(0).options().set_lr(lr), checkpoints);
        double total = (System.nanoTime() - t0) / 1e9;
        export.export(comm, model, ModelExport.Layout.REPLICATED, rank == 0 ? out : null);
        if (rank == 0) {
            EpochStats last = epochs.get(epochs.size() - 1);
            out.printf("final test accuracy %.2f%% after %d epochs, %.1f s, %.0f training examples/s over %d ranks, peak RSS %s%n",
                    last.testAccuracy() * 100, epochs.size(), total,
                    epochs.stream().mapToDouble(EpochStats::examplesPerSecond).average().orElse(0), n,
                    Memory.mib(Memory.peakRssBytes()));
            if (!opts.noPlot) {
                output.writeCurves();
                out.println("curves: " + output.png());
            }
            out.println("per-epoch numbers: " + output.csv());
        }
        return epochs;
    }

    static Metrics evaluate(Communicator comm, Mlp.Stage model, TensorDataset testPart, int batchSize) {
        try (NoGradGuard noGrad = new NoGradGuard()) {
            return MultiNodeEvaluator.evaluate(comm, testPart, batchSize, batch -> {
                Tensor logits = model.forward(batch.field(0));
                Tensor labels = batch.field(1);
                return Map.of("loss", torch.nll_loss(torch.log_softmax(logits, 1), labels).item_double(),
                        "accuracy", Train.correct(logits, labels) / (double) batch.size());
            });
        }
    }
}
