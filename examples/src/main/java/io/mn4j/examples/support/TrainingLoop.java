package io.mn4j.examples.support;

import io.mn4j.communicator.Communicator;
import io.mn4j.iterators.Batch;
import io.mn4j.iterators.BatchIterator;
import io.mn4j.iterators.EpochStats;
import io.mn4j.iterators.Metrics;
import io.mn4j.iterators.MultiNodeEvaluator;
import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.DoubleConsumer;
import org.bytedeco.javacpp.PointerScope;

/**
 * The epoch loop the training examples share: runs one {@link Step} per batch until the iterator
 * starts a new epoch, then evaluates, gathers the numbers of every rank and lets rank 0 print them
 * (with a progress bar during the epoch) and append them to the run's CSV. Every rank runs it.
 *
 * <p>Metrics use two names: {@code loss} and {@code accuracy}, added as batch means with the batch
 * size as count by the ranks that compute them (only those), so that the combined count is the
 * number of distinct training examples processed and the throughput can be computed from it.
 */
public final class TrainingLoop {
    /** One training step on one rank. */
    @FunctionalInterface
    public interface Step {
        /** Trains on {@code batch}; ranks that compute the loss add "loss" and "accuracy" to {@code sink}. */
        void run(Batch batch, Metrics sink);
    }

    /** The evaluation after an epoch; collective, returns the combined metrics on every rank. */
    @FunctionalInterface
    public interface Evaluation {
        Metrics run();
    }

    private final Communicator comm;
    private final CommonOptions opts;
    private final PrintStream out;
    private final RunOutput output;

    /**
     * @param output where rank 0 records epochs (null on other ranks, or for no files)
     */
    public TrainingLoop(Communicator comm, CommonOptions opts, PrintStream out, RunOutput output) {
        this.comm = comm;
        this.opts = opts;
        this.out = out;
        this.output = output;
    }

    /**
     * Runs {@code opts.epochs} epochs.
     *
     * @param setLr applies a learning rate to this rank's optimizer (called before each step)
     * @return the per-epoch numbers (the same on every rank)
     */
    public List<EpochStats> run(BatchIterator it, Step step, Evaluation eval, DoubleConsumer setLr) throws IOException {
        boolean talk = comm.rank() == 0;
        long perEpoch = it.batchesPerEpoch();
        long total = perEpoch * opts.epochs;
        long done = 0;
        List<EpochStats> all = new ArrayList<>();
        for (int epoch = 1; epoch <= opts.epochs; epoch++) {
            Metrics train = new Metrics();
            ProgressBar bar = new ProgressBar(out, String.format("epoch %3d", epoch), perEpoch, talk && !opts.noProgress);
            long t0 = System.nanoTime();
            long k = 0;
            do {
                setLr.accept(opts.lrAt(done, total));
                try (PointerScope scope = new PointerScope()) {
                    Batch b = it.next();
                    step.run(b, train);
                }
                done++;
                k++;
                bar.update(k, train.count("loss") > 0 ? String.format("loss %.4f", train.mean("loss")) : "");
            } while (!it.isNewEpoch());
            double seconds = (System.nanoTime() - t0) / 1e9;
            bar.finish();
            Metrics trainAll;
            Metrics test;
            List<Long> rss;
            try (PointerScope scope = new PointerScope()) {
                trainAll = MultiNodeEvaluator.aggregate(comm, train);
                test = eval.run();
                rss = comm.allgatherObj(Memory.rssBytes());
            }
            // No validation split; bytes are not counted here (a model may talk on communicators of its own).
            EpochStats s = new EpochStats(epoch, trainAll.mean("loss"), trainAll.mean("accuracy"), Double.NaN, test.mean("loss"),
                    test.mean("accuracy"), seconds, trainAll.count("loss") / seconds, -1);
            all.add(s);
            if (talk) {
                EpochReport report = new EpochReport(s, rss.get(0), Collections.max(rss));
                out.println(report.humanLine());
                out.flush();
                if (output != null) {
                    output.add(report);
                }
            }
        }
        return all;
    }
}
