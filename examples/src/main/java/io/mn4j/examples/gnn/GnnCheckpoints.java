package io.mn4j.examples.gnn;

import io.mn4j.checkpoint.CheckpointReader;
import io.mn4j.checkpoint.Checkpointer;
import io.mn4j.communicator.Communicator;
import io.mn4j.examples.support.CheckpointOptions;
import io.mn4j.examples.support.Memory;
import io.mn4j.gnn.partition.PartitionMetadata;
import io.mn4j.gnn.shard.AggregationMode;
import java.io.PrintStream;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Checkpoints of {@code TrainGnn}, every N epochs: the model and Adam (replicated: every rank holds
 * the same, rank 0 keeps them), and on every rank its trainer's epoch count (mini-batch shuffles
 * and samples are drawn from the seed and the epoch), the model's step (dropout masks are drawn per
 * step), its random generator and the epochs' reports. The identity a resume must match: the configuration, the pipeline's settings and the
 * partitioning (method, node ranges, edge cut), so a checkpoint of another partitioning is refused.
 *
 * <p>PIPELINED mode keeps state across epochs (the partners' stale rows and gradients, the
 * smoothing averages). Rather than save it, a checkpoint restarts the pipeline, in the run that
 * goes on as in the run that resumes: the epoch after a checkpoint is exact, as the first epoch of
 * a run, and the ones after it stale again. So a resumed run computes what an uninterrupted run
 * with the same {@code --checkpoint-every} computes, bitwise with staleness 1.
 */
public final class GnnCheckpoints {
    /** One rank's saved position: the epochs done, the model's dropout step and the epochs' reports. */
    public record Progress(int epochs, long dropoutStep, List<GnnEpoch> reports) {
    }

    private final Checkpointer checkpointer;
    private final CheckpointOptions opts;
    private final GnnRun run;
    private final PrintStream talk;

    private GnnCheckpoints(Checkpointer checkpointer, CheckpointOptions opts, GnnRun run, PrintStream talk) {
        this.checkpointer = checkpointer;
        this.opts = opts;
        this.run = run;
        this.talk = talk;
    }

    /** Checkpoints of {@code run} as the options ask, or null without --checkpoint-dir. Collective. */
    public static GnnCheckpoints open(Communicator comm, CheckpointOptions opts, GnnRun run, double smoothing, int staleness,
            PrintStream talk) {
        if (!opts.enabled()) {
            return null;
        }
        PartitionMetadata m = run.partition().metadata();
        Map<String, String> identity = Map.of("program", "TrainGnn", "configuration", run.describe(),
                "pipeline", String.format(Locale.ROOT, "smoothing %s, staleness %d", smoothing, staleness),
                "partitioning", m.numParts() + " parts by " + m.method() + ", node offsets " + Arrays.toString(m.partNodeOffsets())
                        + ", edge cut " + m.edgeCut());
        return new GnnCheckpoints(opts.open(comm, identity), opts, run, talk);
    }

    /**
     * With --resume, restores the newest complete checkpoint and returns the epochs it had done;
     * otherwise checks that the directory holds none and returns none. Collective.
     */
    public List<GnnEpoch> restore() {
        if (!opts.resume) {
            checkpointer.requireNoCheckpoints();
            return List.of();
        }
        try (CheckpointReader r = checkpointer.restore()) {
            if (talk != null) {
                talk.println(checkpointer.note());
            }
            if (r == null) {
                return List.of();
            }
            r.replicatedModule("model", run.model());
            r.replicatedOptimizer("adam", run.optimizer());
            Progress p = r.value("progress", Progress.class);
            run.trainer().resumeAfter(p.epochs());
            run.model().step(p.dropoutStep()); // the masks are drawn per step: resume them where the run was
            return p.reports();
        }
    }

    /** Saves a checkpoint after epoch {@code epoch} if one is due, then restarts a pipeline. Collective. */
    public void afterEpoch(int epoch, List<GnnEpoch> reports) {
        if (epoch % opts.interval().count() != 0) {
            return;
        }
        Checkpointer.Saved s = checkpointer.save(epoch, w -> w.replicatedModule("model", run.model())
                .replicatedOptimizer("adam", run.optimizer()).value("progress", new Progress(run.trainer().epochsDone(), run.model().step(), reports)));
        if (run.graph().mode() == AggregationMode.PIPELINED) {
            run.graph().mode(AggregationMode.PIPELINED);
        }
        if (talk != null) {
            talk.printf(Locale.ROOT, "checkpoint at epoch %d: %s on rank 0, %s in all, %.3f s%n", epoch, Memory.mib(s.bytesThisRank()),
                    Memory.mib(s.bytesAllRanks()), s.seconds());
        }
    }
}
