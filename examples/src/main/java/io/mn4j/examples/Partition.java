package io.mn4j.examples;

import io.mn4j.examples.gnn.GraphOptions;
import io.mn4j.examples.gnn.JvmSetup;
import io.mn4j.examples.gnn.Partitions;
import io.mn4j.examples.support.Cli;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.partition.NodeOrder;
import io.mn4j.gnn.partition.PartitionBuilder;
import io.mn4j.gnn.partition.PartitionStats;
import io.mn4j.gnn.partition.PartitionWriter;
import io.mn4j.gnn.partition.Partitioner;
import io.mn4j.gnn.partition.Partitioners;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Partitions a graph for distributed full-graph training and writes the partition directory that
 * {@code TrainGnn --partitions DIR} (one rank per part) loads, then prints the partition's quality:
 * edge cut, node and edge balance, and the communication volume (boundary rows each partition
 * sends to each other one per layer in one-shot aggregation). A single process; no MPI.
 */
@Command(name = "Partition", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Partitions a graph into K parts (METIS, LDG, range or random) and writes the partition directory.", ""},
        footer = {"", "Examples:",
            "  scripts/mn4j-run io.mn4j.examples.Partition --data cora --parts 4 \\",
            "      --out parts/cora-4",
            "  scripts/mn4j-run io.mn4j.examples.Partition --data synthetic \\",
            "      --nodes 1000000 --parts 8 --method ldg --out parts/syn-8",
            "  scripts/mn4j-run io.mn4j.examples.Partition --data edges.txt --parts 2 \\",
            "      --method random --out parts/edges-2",
            "", "Then: scripts/mn4j-run -np K io.mn4j.examples.TrainGnn --partitions DIR"})
public final class Partition implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    GraphOptions data = new GraphOptions();

    @Option(names = {"-k", "--parts"}, paramLabel = "K", description = "Number of partitions (one per rank of the training job; default: ${DEFAULT-VALUE}).")
    int parts = 2;

    @Option(names = {"-m", "--method"}, paramLabel = "metis|ldg|range|random",
            description = "Partitioner (default: metis if gpmetis is installed, else ldg).")
    String method;

    @Option(names = "--node-order", paramLabel = "none|rcm", converter = Partitions.OrderConverter.class,
            description = "Order of each partition's nodes: increasing original id (none) or reverse Cuthill-McKee for locality in "
                    + "aggregation (rcm; default: ${DEFAULT-VALUE}).")
    NodeOrder nodeOrder = PartitionBuilder.DEFAULT_ORDER;

    @Option(names = "--seed", paramLabel = "S", description = "Partitioner seed (default: ${DEFAULT-VALUE}).")
    long seed = 1;

    @Option(names = {"-o", "--out"}, paramLabel = "DIR", description = "Partition directory to write (default: parts/<data>-<method>-<K>).")
    Path out;

    @Option(names = "--stats-only", description = "Print the statistics without writing the directory.")
    boolean statsOnly;

    public static void main(String[] args) {
        JvmSetup.limitNativeMemory();
        JvmSetup.quietLibraryLogs();
        Cli.main(new Partition(), args);
    }

    @Override
    public Integer call() throws Exception {
        String name = method != null ? method : Partitions.defaultPartitioner();
        if (parts < 1) {
            throw new IllegalArgumentException("--parts must be at least 1, got " + parts);
        }
        data.requireData();
        Partitioner partitioner = Partitioners.byName(name);
        PrintWriter o = spec.commandLine().getOut();
        long t0 = System.nanoTime();
        try (Graph g = data.load()) {
            long t1 = System.nanoTime();
            o.printf(Locale.ROOT, "data: %s (%.1f s)%n", data.describe(g), (t1 - t0) / 1e9);
            int[] assignment = partitioner.partition(g, parts, seed);
            long t2 = System.nanoTime();
            PartitionStats stats = PartitionStats.compute(g, assignment, parts);
            o.printf(Locale.ROOT, "partitioned by %s into %d parts in %.1f s%n", partitioner.name(), parts, (t2 - t1) / 1e9);
            print(stats, o);
            if (!statsOnly) {
                Path dir = out != null ? out : Path.of("parts", data.label().replace(".npz", "") + "-" + partitioner.name() + "-" + parts);
                PartitionWriter.write(dir, g, assignment, parts, partitioner.name(), seed, nodeOrder);
                o.printf(Locale.ROOT, "wrote %s (node order %s) in %.1f s%n", dir, nodeOrder.label(), (System.nanoTime() - t2) / 1e9);
            }
        }
        o.flush();
        return 0;
    }

    /** The statistics as a short report: totals, then one line per partition, then the volume matrix if small. */
    static void print(PartitionStats s, PrintWriter o) {
        o.printf(Locale.ROOT, "edge cut: %d of %d directed edges (%.2f%%)%n", s.edgeCut(), s.numEdges(), 100 * s.cutFraction());
        o.printf(Locale.ROOT, "balance (largest / mean): nodes %.3f, edges %.3f%n", s.nodeBalance(), s.edgeBalance());
        o.printf(Locale.ROOT, "communication volume: %d boundary rows per layer in all (rows a partition receives from the others)%n",
                s.totalCommVolume());
        long[] nodes = s.partNodes();
        long[] edges = s.partEdges();
        o.println("  part      nodes      edges   receives      sends");
        for (int p = 0; p < s.parts(); p++) {
            long sends = 0;
            for (int q = 0; q < s.parts(); q++) {
                sends += s.commVolume(p, q);
            }
            o.printf(Locale.ROOT, "  %4d %10d %10d %10d %10d%n", p, nodes[p], edges[p], s.received(p), sends);
        }
        if (s.parts() > 1 && s.parts() <= 8) {
            o.println("  rows sent per layer, owner (row) -> needer (column):");
            StringBuilder head = new StringBuilder("        ");
            for (int q = 0; q < s.parts(); q++) {
                head.append(String.format(Locale.ROOT, "%9d", q));
            }
            o.println(head);
            for (int p = 0; p < s.parts(); p++) {
                StringBuilder row = new StringBuilder(String.format(Locale.ROOT, "  %4d  ", p));
                for (int q = 0; q < s.parts(); q++) {
                    row.append(String.format(Locale.ROOT, "%9d", s.commVolume(p, q)));
                }
                o.println(row);
            }
        }
    }
}
