package io.mn4j.examples.gnn;

import io.mn4j.communicator.Agreement;
import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.JobInputException;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.partition.LocalHost;
import io.mn4j.gnn.partition.MetisPartitioner;
import io.mn4j.gnn.partition.NodeOrder;
import io.mn4j.gnn.partition.PartitionBuilder;
import io.mn4j.gnn.partition.PartitionData;
import io.mn4j.gnn.partition.PartitionScatter;
import io.mn4j.gnn.partition.PartitionStats;
import io.mn4j.gnn.partition.PartitionWriter;
import io.mn4j.gnn.partition.Partitioner;
import io.mn4j.gnn.partition.Partitioners;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Locale;
import picocli.CommandLine;

/**
 * Choices the example programs make about partitioning, and how {@code TrainGnn} partitions when
 * no partition directory is given. (Loading a partition on every rank with one outcome for all is
 * the library's {@code PartitionReader.load(comm, dir)}.)
 */
public final class Partitions {
    private Partitions() {
    }

    /** Reads {@code --node-order none|rcm} (any case) for picocli. */
    public static final class OrderConverter implements CommandLine.ITypeConverter<NodeOrder> {
        @Override
        public NodeOrder convert(String value) {
            return NodeOrder.byName(value);
        }
    }

    /** The partitioner used when none is named: METIS if {@code gpmetis} is installed, else the built-in LDG. */
    public static String defaultPartitioner() {
        return MetisPartitioner.isAvailable() ? "metis" : "ldg";
    }

    /** Rank 0's graph and its cut, closed together. */
    private record Cut(Graph graph, PartitionBuilder builder) implements AutoCloseable {
        @Override
        public void close() {
            graph.close();
        }
    }

    /**
     * Rank 0 reads the graph and cuts it into one partition per rank; every rank receives its own
     * over MPI (no shared file system needed) and writes it into {@code dir} on its own host, where a
     * later run can load it with {@code --partitions}. Collective; a failure on any rank (no graph,
     * a folder that cannot be written) is a {@link JobInputException} on every rank.
     *
     * @param order the order of each partition's nodes
     * @param talk where rank 0 reports the data and the cut (null on other ranks)
     * @return this rank's partition; the caller closes it
     */
    public static PartitionData cutOnRankZero(Communicator comm, GraphOptions data, String method, long seed, NodeOrder order, Path dir,
            PrintStream talk) {
        int parts = comm.size();
        Cut cut = Agreement.agree(comm, "partitioning '" + data.data + "' into " + parts + " parts with " + method, () -> {
            if (comm.rank() != 0) {
                return null;
            }
            long t0 = System.nanoTime();
            Graph g = data.load();
            try {
                long t1 = System.nanoTime();
                Partitioner p = Partitioners.byName(method);
                PartitionBuilder builder = new PartitionBuilder(g, p.partition(g, parts, seed), parts, p.name(), seed, order);
                long t2 = System.nanoTime();
                PartitionStats stats = builder.stats();
                talk.printf(Locale.ROOT, "data: %s (%.1f s)%n", data.describe(g), (t1 - t0) / 1e9);
                talk.printf(Locale.ROOT, "partitioned by %s into %d in %.1f s: edge cut %d (%.2f%%), node balance %.3f, edge balance %.3f, "
                        + "communication volume %d rows, node order %s; each rank gets its partition over MPI and keeps it in %s%n", p.name(),
                        parts, (t2 - t1) / 1e9, stats.edgeCut(), 100 * stats.cutFraction(), stats.nodeBalance(), stats.edgeBalance(),
                        stats.totalCommVolume(), order.label(), dir);
                return new Cut(g, builder);
            } catch (Exception | Error e) {
                g.close();
                throw e;
            }
        });
        PartitionData part;
        try (Cut c = cut) {
            part = PartitionScatter.scatter(comm, 0, c == null ? null : c.builder());
        }
        try {
            Agreement.agree(comm, "writing partition " + comm.rank() + " to " + dir + " on host " + LocalHost.name(), () -> {
                PartitionWriter.writePart(dir, part);
                return null;
            });
        } catch (JobInputException e) {
            part.close();
            throw e;
        }
        return part;
    }
}
