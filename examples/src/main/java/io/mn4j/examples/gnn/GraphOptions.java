package io.mn4j.examples.gnn;

import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.graph.SyntheticGraphs;
import io.mn4j.gnn.io.CoraFile;
import io.mn4j.gnn.io.EdgeListReader;
import io.mn4j.gnn.io.NpzGraphReader;
import io.mn4j.gnn.io.OgbNodeReader;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Option;

/**
 * Where a graph comes from (a picocli mixin): Planetoid Cora, the synthetic planted-partition
 * graph (the default, no download), a gnn-benchmark {@code .npz} file, an OGB node-property
 * dataset folder, or a plain edge list.
 */
public final class GraphOptions {
    private static final Logger LOG = LoggerFactory.getLogger(GraphOptions.class);
    /** Environment variable with the path of {@code cora.npz} ({@link CoraFile}). */
    public static final String CORA_ENV = CoraFile.ENV;

    @Option(names = "--data", paramLabel = "cora|synthetic|FILE|DIR",
            description = "Graph: 'synthetic' (planted partition, the default), 'cora' (Planetoid Cora with the public split: "
                    + "$" + CORA_ENV + ", else datasets/cora.npz or ../shared/datasets/cora.npz from the working directory "
                    + "or one of its parents, else /work/shared/datasets/cora.npz), a gnn-benchmark FILE.npz, an OGB node-property "
                    + "dataset DIR as the ogb package leaves it (raw/edge.csv.gz, node-feat, node-label, split/NAME/; e.g. "
                    + "dataset/ogbn_arxiv), or an edge list (one 'src dst' per line; structure only). Edges are made undirected.")
    public String data = "synthetic";

    @Option(names = "--nodes", paramLabel = "N", description = "Synthetic graph: nodes (default: ${DEFAULT-VALUE}).")
    public long nodes = 150_000;

    @Option(names = "--avg-degree", paramLabel = "D", description = "Synthetic graph: mean degree (default: ${DEFAULT-VALUE}).")
    public double avgDegree = 10;

    @Option(names = "--classes", paramLabel = "C",
            description = "Synthetic graph: classes (default: 8). Data read from a file or folder: the class count, when its class ids "
                    + "are sparse (default: the largest label + 1, refused when above twice the distinct labels + 16; an OGB dataset's own).")
    public Integer classes;

    @Option(names = "--features", paramLabel = "F", description = "Synthetic graph: feature size (default: ${DEFAULT-VALUE}).")
    public int features = 64;

    @Option(names = "--homophily", paramLabel = "H",
            description = "Synthetic graph: probability that an edge stays in its class (default: ${DEFAULT-VALUE}).")
    public double homophily = 0.8;

    @Option(names = "--graph-seed", paramLabel = "S", description = "Seed of the synthetic graph and of random splits (default: ${DEFAULT-VALUE}).")
    public long graphSeed = 1;

    @Option(names = "--split", paramLabel = "TRAIN,VAL", split = ",", arity = "1", hideParamSyntax = true,
            description = "Random train/validation fractions (rest: test) for graphs without a split, and for the synthetic graph "
                    + "(default: 0.1,0.1).")
    public double[] split = {0.1, 0.1};

    @Option(names = "--normalize-features", negatable = true, fallbackValue = "true",
            description = "Divide each feature row by its sum (as Kipf & Welling and PyG's Cora examples do). Default: on for "
                    + ".npz data (Cora), off for the synthetic graph, whose features are signed.")
    public Boolean normalizeFeatures;

    /** True for the built-in synthetic graph. */
    public boolean isSynthetic() {
        return data.equalsIgnoreCase("synthetic");
    }

    /** A short name of the data for titles: "cora", "synthetic" or the file name. */
    public String label() {
        if (isSynthetic() || data.equalsIgnoreCase("cora")) {
            return data.toLowerCase(Locale.ROOT);
        }
        return Path.of(data).getFileName().toString();
    }

    /** Where {@code cora.npz} is: {@value #CORA_ENV} if set, else found near the working directory ({@link CoraFile}). */
    public static Path coraPath() throws NoSuchFileException {
        return CoraFile.find();
    }

    /** Checks option values that need no data. */
    public void validate() {
        if (split.length != 2 || split[0] < 0 || split[1] < 0 || split[0] + split[1] > 1) {
            throw new IllegalArgumentException("--split needs two fractions TRAIN,VAL with TRAIN+VAL <= 1");
        }
        if (classes != null && classes < 1) {
            throw new IllegalArgumentException("--classes must be at least 1, got " + classes);
        }
        if (isSynthetic() && (nodes < 2 || features < 1 || avgDegree <= 0)) {
            throw new IllegalArgumentException("synthetic graph needs --nodes >= 2, --features >= 1, --avg-degree > 0");
        }
    }

    /**
     * Checks that the graph this process will read is there ({@link #validate} too), so that a
     * wrong {@code --data} is a usage error before the job starts rather than a failure inside it.
     */
    public void requireData() {
        validate();
        if (isSynthetic()) {
            return;
        }
        if (data.equalsIgnoreCase("cora")) {
            try {
                coraPath();
            } catch (NoSuchFileException e) {
                throw new IllegalArgumentException("--data cora: " + e.getReason(), e);
            }
        } else if (!Files.exists(Path.of(data))) {
            throw new IllegalArgumentException("--data " + data + ": no such file (expected 'synthetic', 'cora', a .npz file or an edge list)");
        }
    }

    /** The synthetic graph's classes: {@code --classes}, else 8. */
    public int syntheticClasses() {
        return classes != null ? classes : 8;
    }

    /** The synthetic graph's homophily and split. */
    public SyntheticGraphs.Options syntheticOptions() {
        return new SyntheticGraphs.Options().homophily(homophily).split(split[0], split[1]);
    }

    /**
     * Loads or generates the graph. Graphs read from files are made undirected when they are not
     * (an edge list usually lists each edge once), lose their self loops (GCN and GAT give every
     * node one of their own; dropping the stored ones keeps SAGE's mean over the same neighbours
     * as theirs) and their edge weights (the shard manager aggregates unweighted graphs and would
     * refuse them after partitioning; a warning says so), and get a random split when they have
     * labels but none.
     */
    public Graph load() throws IOException {
        validate();
        if (isSynthetic()) {
            return SyntheticGraphs.plantedPartition(nodes, avgDegree, syntheticClasses(), features, graphSeed, syntheticOptions());
        }
        Path file = data.equalsIgnoreCase("cora") ? coraPath() : Path.of(data);
        int declared = classes != null ? classes : -1;
        Graph g;
        if (Files.isDirectory(file)) {
            g = OgbNodeReader.read(file, null, declared);
        } else if (!Files.isRegularFile(file)) {
            throw new NoSuchFileException(file.toString(), null, "graph file not found");
        } else {
            g = file.toString().endsWith(".npz") ? NpzGraphReader.read(file, declared) : EdgeListReader.read(file);
        }
        if (!g.isSymmetric()) {
            g = replace(g, g.symmetrize());
        }
        if (g.adjacency().diagonalCount() > 0) {
            g = replace(g, g.withoutSelfLoops());
        }
        if (g.edgeWeight() != null) {
            LOG.warn("{} has edge weights; they are ignored: mn4j's GNN layers aggregate unweighted graphs", file);
            g = replace(g, g.withEdgeWeight(null));
        }
        if (g.hasLabels() && !g.hasMasks()) {
            g = replace(g, g.withRandomSplit(split[0], split[1], graphSeed));
        }
        boolean normalize = normalizeFeatures != null ? normalizeFeatures : file.toString().endsWith(".npz");
        if (normalize && g.hasFeatures()) {
            g = replace(g, g.withRowNormalizedFeatures());
        }
        return g;
    }

    private static Graph replace(Graph old, Graph next) {
        old.close();
        return next;
    }

    /** A description of the data for the run's header line. */
    public String describe(Graph g) {
        String what = isSynthetic()
                ? String.format(Locale.ROOT, "synthetic planted partition (homophily %.2f, graph seed %d)", homophily, graphSeed)
                : label();
        return what + ": " + g.numNodes() + " nodes, " + g.numEdges() + " directed edges, " + g.numFeatures() + " features, "
                + g.numClasses() + " classes";
    }
}
