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
        return run(it, step, eval, setLr, null);
    }

    /**
     * As {@link #run(BatchIterator, Step, Evaluation, DoubleConsumer)}, with checkpoints (null:
     * none): with --resume it continues where the newest complete checkpoint left off, and it saves
     * as --checkpoint-every says.
     */
    public List<EpochStats> run(BatchIterator it, Step step, Evaluation eval, DoubleConsumer setLr, TrainingCheckpoints checkpoints)
            throws IOException {
        boolean talk = comm.rank() == 0;
        long perEpoch = it.batchesPerEpoch();
        long total = perEpoch * opts.epochs;
        long done = 0;
        List<EpochStats> all = new ArrayList<>();
        List<EpochReport> reports = new ArrayList<>();
        TrainingCheckpoints.LoopState resumed = checkpoints == null ? null : checkpoints.restore(it);
        int first = 1;
        if (resumed != null) {
            first = resumed.epoch();
            done = resumed.done();
            for (EpochReport r : resumed.reports()) {
                reports.add(r);
                all.add(r.stats());
                if (talk && output != null) {
                    output.add(r);
                }
            }
        }
        for (int epoch = first; epoch <= opts.epochs; epoch++) {
            boolean continuing = resumed != null && epoch == first && resumed.inEpoch() > 0;
            Metrics train = continuing ? resumed.train() : new Metrics();
            ProgressBar bar = new ProgressBar(out, String.format("epoch %3d", epoch), perEpoch, talk && !opts.noProgress);
            long t0 = System.nanoTime() - (continuing ? (long) (resumed.seconds() * 1e9) : 0);
            long k = continuing ? resumed.inEpoch() : 0;
            do {
                setLr.accept(opts.lrAt(done, total));
                try (PointerScope scope = new PointerScope()) {
                    Batch b = it.next();
                    step.run(b, train);
                }
                done++;
                k++;
                bar.update(k, train.count("loss") > 0 ? String.format("loss %.4f", train.mean("loss")) : "");
                if (checkpoints != null && !it.isNewEpoch() && checkpoints.dueMidEpoch(done)) {
                    bar.finish();
                    checkpoints.save(new TrainingCheckpoints.LoopState(epoch, done, k, train, (System.nanoTime() - t0) / 1e9,
                            List.copyOf(reports)), it);
                }
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
            EpochStats s = new EpochStats(epoch, trainAll.mean("loss"), trainAll.mean("accuracy"), Double.NaN, Double.NaN, test.mean("loss"),
                    test.mean("accuracy"), seconds, trainAll.count("loss") / seconds, -1);
            all.add(s);
            EpochReport report = new EpochReport(s, rss.get(0), Collections.max(rss));
            reports.add(report);
            if (talk) {
                out.println(report.humanLine());
                out.flush();
                if (output != null) {
                    output.add(report);
                }
            }
            if (checkpoints != null && checkpoints.dueAtEpochEnd(epoch, done)) {
                checkpoints.save(new TrainingCheckpoints.LoopState(epoch + 1, done, 0, new Metrics(), 0, List.copyOf(reports)), it);
            }
        }
        return all;
    }
}
