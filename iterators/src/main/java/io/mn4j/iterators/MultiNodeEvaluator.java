package io.mn4j.iterators;

import io.mn4j.communicator.Agreement;
import io.mn4j.communicator.Communicator;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.bytedeco.javacpp.PointerScope;

/**
 * ChainerMN's {@code create_multi_node_evaluator}, made exact for parts of unequal size: each
 * rank evaluates its own examples, and the ranks combine sums and counts (not means), so the
 * result is the mean over all examples, identical on every rank. ChainerMN averages the per-rank
 * means, which is wrong as soon as the parts differ in size (for instance disjoint parts from
 * {@link Datasets#scatterDataset} with {@code forceEqualLength=false}, or ranks with no data).
 *
 * <p>All methods are collective.
 */
public final class MultiNodeEvaluator {
    private MultiNodeEvaluator() {
    }

    /**
     * Combines every rank's metrics: the result holds, for every name seen on any rank, the sum of
     * the sums and of the counts over the ranks (added in rank order, so every rank gets the very
     * same numbers).
     */
    public static Metrics aggregate(Communicator comm, Metrics local) {
        List<Metrics> all = comm.allgatherObj(local);
        Metrics total = new Metrics();
        for (Metrics m : all) {
            total.addAll(m);
        }
        return total;
    }

    /**
     * Evaluates {@code metricsOfBatch} over one pass of a non-repeating iterator on every rank and
     * combines the results. The iterator is reset first, as Chainer's evaluator does, so the same
     * iterator serves every evaluation. {@code metricsOfBatch} returns, for a batch, the mean of
     * each metric over that batch's examples; it is weighted by the batch size. A rank may pass
     * null (no local data, for instance a rank of a model-parallel job that computes no loss).
     * Each batch is evaluated inside a {@code PointerScope}: tensors made while evaluating it are
     * released afterwards (call {@code retainReference()} on any that must outlive it).
     */
    public static Metrics evaluate(Communicator comm, BatchIterator iterator,
            Function<Batch, Map<String, Double>> metricsOfBatch) {
        String problem = iterator != null && iterator.repeat()
                ? "the iterator repeats, so one pass over it never ends; use repeat=false" : null;
        return evaluateAfterCheck(comm, iterator, problem, metricsOfBatch);
    }

    /**
     * Evaluates this rank's part of a data set in batches of at most {@code batchSize} (a part
     * smaller than a batch, or empty, is fine) and combines the results over the ranks. A batch
     * size below 1 on any rank fails on every rank, those without data included.
     */
    public static Metrics evaluate(Communicator comm, Dataset<?> localPart, int batchSize,
            Function<Batch, Map<String, Double>> metricsOfBatch) {
        String problem = batchSize < 1 ? "batch size must be at least 1, got " + batchSize : null;
        BatchIterator it = problem != null || localPart == null || localPart.size() == 0 ? null
                : new SerialIterator(localPart, (int) Math.min(batchSize, localPart.size()), false);
        return evaluateAfterCheck(comm, it, problem, metricsOfBatch);
    }

    /**
     * Agrees on every rank's {@code problem} (null if none), then evaluates: ranks must not start
     * on the data before all know that none will throw.
     */
    private static Metrics evaluateAfterCheck(Communicator comm, BatchIterator iterator, String problem,
            Function<Batch, Map<String, Double>> metricsOfBatch) {
        Agreement.noProblems(comm, "MultiNodeEvaluator", problem);
        Metrics local = new Metrics();
        if (iterator != null) {
            iterator.reset();
            while (iterator.hasNext()) {
                // the batch and whatever the metric function makes of it are native memory the
                // garbage collector does not see: release them batch by batch
                try (PointerScope scope = new PointerScope()) {
                    Batch b = iterator.next();
                    for (Map.Entry<String, Double> e : metricsOfBatch.apply(b).entrySet()) {
                        local.addMean(e.getKey(), e.getValue(), b.size());
                    }
                }
            }
        }
        return aggregate(comm, local);
    }

}
