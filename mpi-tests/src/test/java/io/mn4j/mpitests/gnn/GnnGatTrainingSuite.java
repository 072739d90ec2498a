package io.mn4j.mpitests.gnn;

import io.mn4j.communicator.Communicator;
import io.mn4j.examples.gnn.GnnRun;
import io.mn4j.gnn.shard.AggregationMode;
import io.mn4j.iterators.EpochStats;
import io.mn4j.mpitests.Check;
import io.mn4j.mpitests.Scenario;
import java.io.IOException;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@link GnnTrainingSuite} plus GAT on Cora (8 heads of 8 hidden units, ELU, dropout 0.6, Adam lr
 * 0.005, weight decay 5e-4) in each aggregation mode: test accuracy at the best validation epoch of
 * at least 79%, and the per-epoch losses of the first {@value #LOSS_EPOCHS} epochs equal in the
 * three modes to 1e-4 (the runs start from the same parameters and draw the same dropout masks);
 * rank 0 writes those losses for the comparison with the other rank counts (instead of the base
 * suite's separate GAT runs). Meant for 2, 3 and 4 ranks.
 */
public class GnnGatTrainingSuite extends GnnTrainingSuite {
    static final int GAT_EPOCHS = 30;
    static final int LOSS_EPOCHS = 20;

    /** Each mode's run, kept for the comparison scenario that follows them in the same launch. */
    private static final Map<AggregationMode, List<EpochStats>> RUNS = new EnumMap<>(AggregationMode.class);

    @Override
    public Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = super.scenarios();
        s.remove(GAT_LOSSES);
        for (AggregationMode mode : Modes.exact()) {
            s.put("GAT on Cora in " + mode + " reaches 79% test accuracy", (c, check) -> gatCora(c, check, mode));
        }
        s.put("GAT on Cora in PIPELINED reaches 79% test accuracy", (c, check) -> gatCora(c, check, AggregationMode.PIPELINED));
        s.put("GAT on Cora: per-epoch losses equal in the three modes", GnnGatTrainingSuite::sameLosses);
        s.put("GAT on Cora: PIPELINED equals ONE_SHOT in its exact first epoch, and moves away later (stale rows in use)",
                GnnGatTrainingSuite::pipelinedLosses);
        return s;
    }

    private static void gatCora(Communicator c, Check check, AggregationMode mode) throws IOException {
        List<EpochStats> epochs = train(c, TrainingData.cora(c.size()), GnnRun.Config.gatCora(mode, 1), GAT_EPOCHS);
        RUNS.put(mode, epochs);
        if (mode != AggregationMode.PIPELINED) {
            writeLosses(c, "gat", mode, epochs.subList(0, LOSS_EPOCHS));
        }
        report(c, "GAT Cora " + mode, epochs);
        EpochStats best = bestValidation(epochs);
        check.isTrue("test accuracy at the best validation epoch >= 79%", best.testAccuracy() >= 0.79,
                "test accuracy " + best.testAccuracy() + " at epoch " + best.epoch() + " (val " + best.validationAccuracy() + ")");
    }

    private static void pipelinedLosses(Communicator c, Check check) {
        List<EpochStats> exact = RUNS.get(AggregationMode.ONE_SHOT);
        List<EpochStats> sar = RUNS.get(AggregationMode.SAR);
        List<EpochStats> pipelined = RUNS.get(AggregationMode.PIPELINED);
        check.isTrue("SAR, ONE_SHOT and PIPELINED ran", exact != null && sar != null && pipelined != null, "runs of " + RUNS.keySet());
        if (exact == null || sar == null || pipelined == null) {
            return;
        }
        check.close("loss of epoch 1", exact.get(0).trainLoss(), pipelined.get(0).trainLoss(), 1e-4);
        // One-shot is pipelined without staleness; SAR against it shows how far two exact
        // computations drift apart in rounding alone.
        double stale = 0, rounding = 0;
        for (int e = 1; e < LOSS_EPOCHS; e++) {
            stale = Math.max(stale, Math.abs(exact.get(e).trainLoss() - pipelined.get(e).trainLoss()));
            rounding = Math.max(rounding, Math.abs(exact.get(e).trainLoss() - sar.get(e).trainLoss()));
        }
        String diffs = String.format(Locale.ROOT, "largest difference of the losses of epochs 2-%d from ONE_SHOT's: PIPELINED %.3g, SAR %.3g",
                LOSS_EPOCHS, stale, rounding);
        // One rank reads nothing stale; on more, epoch 2 on reads the last epoch's rows (the
        // parameters have changed since): the losses must move apart by far more than rounding
        // (measured: 7e-4 at 2 ranks and 1.7e-3 at 4 against 6e-8).
        check.isTrue(c.size() > 1 ? "PIPELINED's losses move away from ONE_SHOT's by more than rounding" : "the losses equal",
                c.size() > 1 ? stale > 1e-5 && stale > 100 * rounding : stale < 1e-4, diffs);
    }

    private static void sameLosses(Communicator c, Check check) {
        List<EpochStats> sar = RUNS.get(AggregationMode.SAR);
        check.isTrue("all three exact modes ran", RUNS.keySet().containsAll(Modes.exact()), "runs of " + RUNS.keySet());
        if (sar == null) {
            return;
        }
        for (AggregationMode mode : new AggregationMode[] {AggregationMode.SEQUENTIAL, AggregationMode.ONE_SHOT}) {
            List<EpochStats> other = RUNS.get(mode);
            if (other == null) {
                continue;
            }
            for (int e = 0; e < LOSS_EPOCHS; e++) {
                check.close(mode + " vs SAR, loss of epoch " + (e + 1), sar.get(e).trainLoss(), other.get(e).trainLoss(), 1e-4);
            }
        }
    }
}
