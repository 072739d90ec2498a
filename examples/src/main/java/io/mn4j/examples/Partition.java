package io.mn4j.examples;

import io.mn4j.examples.gnn.GraphOptions;
import io.mn4j.examples.gnn.JvmSetup;
import io.mn4j.examples.gnn.Partitions;
import io.mn4j.examples.support.ByteSize;
import io.mn4j.examples.support.Cli;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.graph.SyntheticOgbWriter;
import io.mn4j.gnn.io.OgbNodeReader;
import io.mn4j.gnn.partition.NodeOrder;
import io.mn4j.gnn.partition.OutOfCoreGraph;
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
 *
 * <p>{@code --out-of-core} partitions an OGB folder without holding its edges
 * ({@link OutOfCoreGraph}); {@code --write-ogb} writes the synthetic graph as such a folder, also
 * without holding its edges ({@link SyntheticOgbWriter}).
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
            "  scripts/mn4j-run io.mn4j.examples.Partition --data synthetic \\",
            "      --nodes 2450000 --avg-degree 50.6 --write-ogb data/syn-products",
            "  scripts/mn4j-run io.mn4j.examples.Partition --data data/syn-products \\",
            "      --out-of-core --memory-budget 1g --parts 4 --out parts/syn-4",
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

    @Option(names = "--out-of-core",
            description = "Partition an OGB folder (--data DIR) without holding its edges, for graphs larger than memory: the edge "
                    + "file is read once into sorted temporary files, which each pass of LDG reads again; memory is a few arrays of one "
                    + "entry per node plus --memory-budget. Same partitions and files as in memory (LDG, range or random; node order "
                    + "none). Off by default: in memory is faster when the graph fits.")
    boolean outOfCore;

    @Option(names = "--memory-budget", paramLabel = "SIZE", converter = ByteSize.class,
            description = "With --out-of-core: memory for the edges sorted at once, e.g. 256m or 2g (default: 512m); a smaller "
                    + "budget makes more, smaller temporary files.")
    long memoryBudget = 512L << 20;

    @Option(names = "--temp-dir", paramLabel = "DIR",
            description = "With --out-of-core: where the temporary files go (about 12 bytes per directed edge; default: the folder "
                    + "the output directory is in). They are deleted at the end, also after a failure.")
    Path tempDir;

    @Option(names = "--write-ogb", paramLabel = "DIR",
            description = "Instead of partitioning, write the synthetic graph (--data synthetic with its --nodes, --avg-degree, "
                    + "--features, --classes, ...) as an OGB folder DIR, drawn chunk by chunk without holding its edges; "
                    + "--data DIR reads it back as the same graph.")
    Path writeOgb;

    public static void main(String[] args) {
        JvmSetup.limitNativeMemory();
        JvmSetup.quietLibraryLogs();
        Cli.main(new Partition(), args);
    }

    @Override
    public Integer call() throws Exception {
        if (parts < 1) {
            throw new IllegalArgumentException("--parts must be at least 1, got " + parts);
        }
        data.requireData();
        if (writeOgb != null) {
            return writeOgb();
        }
        if (outOfCore) {
            return outOfCore();
        }
        String name = method != null ? method : Partitions.defaultPartitioner();
        Partitioner partitioner = Partitioners.byName(name);
        PrintWriter o = spec.commandLine().getOut();
        long t0 = System.nanoTime();
        try (Graph g = data.load()) {
            long t1 = System.nanoTime();
            o.printf(Locale.ROOT, "data: %s (%.1f s)%n", data.describe(g), (t1 - t0) / 1e9);
            int[] assignment = partitioner.partition(g, parts, seed);
            long t2 = System.nanoTime();
            o.printf(Locale.ROOT, "partitioned by %s into %d parts in %.1f s%n", partitioner.name(), parts, (t2 - t1) / 1e9);
            if (statsOnly) {
                print(PartitionStats.compute(g, assignment, parts), o);
            } else {
                // The cut counts the statistics once, for the report and the metadata.
                PartitionBuilder cut = new PartitionBuilder(g, assignment, parts, partitioner.name(), seed, nodeOrder);
                print(cut.stats(), o);
                Path dir = outDir(partitioner);
                PartitionWriter.write(dir, cut);
                o.printf(Locale.ROOT, "wrote %s (node order %s) in %.1f s%n", dir, nodeOrder.label(), (System.nanoTime() - t2) / 1e9);
            }
        }
        o.flush();
        return 0;
    }

    private Path outDir(Partitioner partitioner) {
        return out != null ? out : Path.of("parts", data.label().replace(".npz", "") + "-" + partitioner.name() + "-" + parts);
    }

    /** {@code --out-of-core}: the options it cannot honour are usage errors, named. */
    private Partitioner outOfCorePartitioner() {
        Path dir = Path.of(data.data);
        if (data.isSynthetic() || !OgbNodeReader.isOgbFolder(dir)) {
            throw new IllegalArgumentException("--out-of-core reads an OGB folder (--data DIR with raw/edge.csv.gz), not '" + data.data
                    + "'" + (data.isSynthetic() ? "; write the synthetic graph as one first with --write-ogb DIR" : ""));
        }
        if (nodeOrder != NodeOrder.NONE) {
            throw new IllegalArgumentException("--node-order " + nodeOrder.label() + " needs the graph in memory: drop --out-of-core, "
                    + "or keep the node order none");
        }
        if (Boolean.TRUE.equals(data.normalizeFeatures)) {
            throw new IllegalArgumentException("--normalize-features needs the features in memory: drop --out-of-core, or the option");
        }
        String name = method != null ? method : "ldg";
        if (name.equalsIgnoreCase("metis")) {
            throw new IllegalArgumentException("--method metis needs the whole graph in memory (gpmetis reads it from one file): drop "
                    + "--out-of-core, or use --method ldg, range or random");
        }
        return Partitioners.byName(name);
    }

    private int outOfCore() throws Exception {
        Partitioner partitioner = outOfCorePartitioner();
        PrintWriter o = spec.commandLine().getOut();
        Path dir = outDir(partitioner);
        Path temp = tempDir != null ? tempDir : dir.toAbsolutePath().getParent();
        long t0 = System.nanoTime();
        try (OutOfCoreGraph g = OutOfCoreGraph.open(Path.of(data.data), data.classes != null ? data.classes : -1, seed, memoryBudget, temp)) {
            long t1 = System.nanoTime();
            o.printf(Locale.ROOT, "data: %s: %d nodes, %d directed edges, %d features, %d classes, read out of core into %s in %.1f s%n",
                    data.label(), g.numNodes(), g.numEdges(), g.numFeatures(), g.numClasses(), temp, (t1 - t0) / 1e9);
            int[] assignment = g.partition(partitioner, parts);
            long t2 = System.nanoTime();
            o.printf(Locale.ROOT, "partitioned by %s into %d parts in %.1f s%n", partitioner.name(), parts, (t2 - t1) / 1e9);
            print(g.stats(assignment, parts), o);
            if (!statsOnly) {
                g.write(dir, assignment, parts, partitioner.name());
                o.printf(Locale.ROOT, "wrote %s (node order none) in %.1f s%n", dir, (System.nanoTime() - t2) / 1e9);
            }
        }
        o.flush();
        return 0;
    }

    private int writeOgb() throws Exception {
        if (!data.isSynthetic()) {
            throw new IllegalArgumentException("--write-ogb writes the synthetic graph (--data synthetic), not '" + data.data + "'");
        }
        PrintWriter o = spec.commandLine().getOut();
        long t0 = System.nanoTime();
        int classes = data.syntheticClasses();
        long lines = SyntheticOgbWriter.write(writeOgb, data.nodes, data.avgDegree, classes, data.features, data.graphSeed,
                data.syntheticOptions());
        o.printf(Locale.ROOT, "wrote %s: synthetic planted partition, %d nodes, %d edge lines (each undirected edge once), %d features, "
                + "%d classes, split/%s, in %.1f s%n", writeOgb, data.nodes, lines, data.features, classes, SyntheticOgbWriter.SPLIT,
                (System.nanoTime() - t0) / 1e9);
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
