package io.mn4j.mpitests.gnn;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.ReduceOp;
import io.mn4j.gnn.shard.AggregationMode;
import io.mn4j.gnn.shard.EdgeNorm;
import io.mn4j.gnn.shard.GraphShardManager;
import java.nio.file.Files;
import java.nio.file.Path;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * A PIPELINED training loop of two aggregations per epoch in which the last rank throws, inside
 * the shard manager's try-with-resources, while the others go on: {@code PipelinedFailureMain
 * <dir> <where>}. {@code where}: {@code first-epoch} (between the two aggregations of epoch 0, in
 * which the others wait for its rows), {@code forward} (between them in epoch 2, when the others
 * read the rows it sent the epoch before and wait only in the loss's all-reduce) or
 * {@code backward} (after epoch 2's forward, before its backward). Closing the manager on the way
 * out completes the failing rank's exchanges in flight; the job must then end on every rank with
 * the failing rank's message. The failing rank writes the time it throws; a rank that gets
 * through every epoch writes {@code rank-R.finished}.
 */
public final class PipelinedFailureMain {
    static final String MESSAGE = "deliberate failure in pipelined training";
    static final int EPOCHS = 4;

    private PipelinedFailureMain() {
    }

    public static void main(String[] args) {
        Path dir = Path.of(args[0]);
        String where = args[1];
        Communicator.run(c -> train(c, dir, where));
    }

    private static void train(Communicator c, Path dir, String where) throws Exception {
        int me = c.rank();
        boolean failing = me == c.size() - 1;
        int failEpoch = where.equals("first-epoch") ? 0 : 2;
        RandomPartitionedGraph g = new RandomPartitionedGraph(47, 160, c.size(), 5, false);
        try (GraphShardManager m = GraphShardManager.build(c, g.offsets, g.localInEdges(me)).mode(AggregationMode.PIPELINED);
                PointerScope scope = new PointerScope()) {
            Tensor x = g.slice(RandomPartitionedGraph.values(20, torch.ScalarType.Double, g.n, 5), me).clone().set_requires_grad(true);
            for (int t = 0; t < EPOCHS; t++) {
                boolean failNow = failing && t == failEpoch;
                m.nextEpoch();
                Tensor h = m.aggregate(x, EdgeNorm.SUM).tanh();
                if (failNow && !where.equals("backward")) {
                    fail(dir, me, where);
                }
                Tensor loss = m.aggregate(h, EdgeNorm.SUM).sum();
                if (failNow) {
                    fail(dir, me, where);
                }
                loss.backward();
                c.allreduce(loss.detach(), ReduceOp.SUM);
            }
        }
        Files.writeString(dir.resolve("rank-" + me + ".finished"), "finished");
    }

    private static void fail(Path dir, int rank, String where) throws Exception {
        Files.writeString(dir.resolve("throwing-at-millis"), Long.toString(System.currentTimeMillis()));
        throw new IllegalStateException(MESSAGE + " on rank " + rank + " (" + where + ")");
    }
}
