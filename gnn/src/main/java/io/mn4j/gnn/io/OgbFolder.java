package io.mn4j.gnn.io;

import io.mn4j.gnn.graph.Graph;
import io.mn4j.tensor.Tensors;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;
import org.bytedeco.pytorch.Tensor;

/**
 * The files of an OGB node-property dataset folder (layout in {@link OgbNodeReader}) and streaming
 * access to each: the edges one at a time, the features a block of rows at a time, the labels and
 * the split as arrays of one entry per node. {@link OgbNodeReader} builds a graph in memory from
 * them; the out-of-core partitioner reads the edges in passes without holding them. Every problem
 * is a {@link GraphFormatException} (or a {@link NoSuchFileException}) naming the file and, for a
 * bad row, its line.
 */
public final class OgbFolder {
    /** Class count and split of the OGB node datasets with one label per node, by folder name. */
    private static final Map<String, Known> KNOWN = Map.of(
            "ogbn_arxiv", new Known(40, "time"),
            "ogbn_products", new Known(47, "sales_ranking"),
            "ogbn_papers100m", new Known(172, "time"));

    private record Known(int classes, String split) {
    }

    private final Path dir;
    private final Path edgeFile;
    private final Path featFile;
    private final Path labelFile;
    private final Path splitDir;
    private final Known known;
    private final long declaredNodes;
    private final long declaredEdges;

    private OgbFolder(Path dir, Path edgeFile, String split) throws IOException {
        Path raw = dir.resolve("raw");
        this.dir = dir;
        this.edgeFile = edgeFile;
        this.featFile = find(raw, "node-feat");
        this.labelFile = find(raw, "node-label");
        this.known = KNOWN.get(dir.toAbsolutePath().normalize().getFileName().toString().toLowerCase(Locale.ROOT).replace('-', '_'));
        this.declaredNodes = count(raw, "num-node-list");
        this.declaredEdges = count(raw, "num-edge-list");
        this.splitDir = splitDir(dir, split, known);
    }

    /** Whether {@code dir} looks like an OGB dataset folder: it has {@code raw/edge.csv.gz} (or {@code raw/edge.csv}). */
    public static boolean isOgbFolder(Path dir) {
        return Files.isDirectory(dir) && find(dir.resolve("raw"), "edge") != null;
    }

    /**
     * Opens the folder: finds its files, reads the node and edge counts when given, and picks the
     * split (the one named, else the only one, else the known dataset's).
     *
     * @param split the split's folder name under {@code split/}, or null
     */
    public static OgbFolder open(Path dir, String split) throws IOException {
        Path raw = dir.resolve("raw");
        Path edgeFile = find(raw, "edge");
        if (edgeFile == null) {
            String why = Files.isDirectory(raw.resolve("relations")) ? "heterogeneous OGB graphs (ogbn-mag) are not supported"
                    : "no " + raw.resolve("edge.csv.gz");
            throw new GraphFormatException(dir + ": not an OGB node-property dataset folder: " + why
                    + " (expected raw/edge.csv.gz, raw/node-feat.csv.gz, raw/node-label.csv.gz and split/NAME/ as the ogb package leaves them)");
        }
        return new OgbFolder(dir, edgeFile, split);
    }

    /** The folder. */
    public Path dir() {
        return dir;
    }

    /** {@code raw/edge.csv.gz} (or {@code .csv}). */
    public Path edgeFile() {
        return edgeFile;
    }

    /** The node count of {@code num-node-list}, or -1 without that file. */
    public long declaredNodes() {
        return declaredNodes;
    }

    /** The edge count of {@code num-edge-list}, or -1 without that file. */
    public long declaredEdges() {
        return declaredEdges;
    }

    /** Whether the folder has node features. */
    public boolean hasFeatures() {
        return featFile != null;
    }

    /** Whether the folder has node labels. */
    public boolean hasLabels() {
        return labelFile != null;
    }

    /** The class count {@code declared} (≥ 0), else the known dataset's, else -1. */
    int declaredClasses(int declared) {
        return declared >= 0 ? declared : known != null ? known.classes() : -1;
    }

    /** Receives the edges of {@link #forEachEdge}, in file order. */
    public interface EdgeSink {
        /** One stored edge {@code src -> dst}. */
        void edge(long src, long dst) throws IOException;
    }

    /**
     * What a pass over the edges found: their number, and the largest node id with the line where
     * it first occurs.
     */
    public record EdgeScan(long count, long maxId, long maxIdLine) {
    }

    /**
     * Streams the edges, checking every line (two node ids, not negative, below {@code num-node-list})
     * and, at the end, their number against {@code num-edge-list}.
     */
    public EdgeScan forEachEdge(EdgeSink sink) throws IOException {
        long maxId = -1, maxIdLine = 0, count = 0;
        try (NumericCsv csv = NumericCsv.open(edgeFile)) {
            while (csv.nextLine()) {
                long s = csv.readLong("source node");
                long d = csv.readLong("destination node");
                csv.endLine(2);
                long hi = Math.max(s, d);
                if (Math.min(s, d) < 0 || declaredNodes >= 0 && hi >= declaredNodes) {
                    throw new GraphFormatException(csv.at() + "edge " + s + "," + d + ": node ids must be in [0, "
                            + (declaredNodes >= 0 ? declaredNodes + ") (num-node-list)" : "n)"));
                }
                if (hi > maxId) {
                    maxId = hi;
                    maxIdLine = csv.line();
                }
                sink.edge(s, d);
                count++;
            }
        }
        if (declaredEdges >= 0 && count != declaredEdges) {
            throw new GraphFormatException(edgeFile + ": " + count + " edges, but num-edge-list says " + declaredEdges);
        }
        return new EdgeScan(count, maxId, maxIdLine);
    }

    /**
     * Checks that the edges' node ids lie below {@code n}, the node count of {@link #nodeCount()}
     * ({@code num-node-list}, else the features' rows, else the labels').
     */
    public void checkEdgeIds(EdgeScan scan, long n) throws GraphFormatException {
        if (scan.maxId() >= n) {
            String from = declaredNodes >= 0 ? "num-node-list" : featFile != null ? featFile.getFileName().toString()
                    : labelFile != null ? labelFile.getFileName().toString() : "the edges";
            throw new GraphFormatException(edgeFile + ":" + scan.maxIdLine() + ": node " + scan.maxId() + " is not below the " + n
                    + " nodes of " + from);
        }
    }

    /**
     * The node count as {@link OgbNodeReader} takes it: {@code num-node-list}, else the rows of
     * features, else of labels, else the largest node id + 1 (each a pass over that file).
     */
    public long nodeCount() throws IOException {
        if (declaredNodes >= 0) {
            return declaredNodes;
        }
        if (featFile != null) {
            long[] rows = {0};
            OgbFeatures.forEachBlock(featFile, -1, (block, count, width) -> rows[0] += count / width);
            return rows[0];
        }
        if (labelFile != null) {
            return labelArray(-1).length;
        }
        return forEachEdge((s, d) -> { }).maxId() + 1;
    }

    /** float32 [n, f] features ({@code n} -1: as many rows as the file has), or null without features. */
    public Tensor features(long n) throws IOException {
        return featFile == null ? null : OgbFeatures.read(featFile, n);
    }

    /**
     * Streams the features a block of whole rows at a time, in node order, checking that there are
     * {@code n} rows of one width; returns the width (0 without features).
     */
    public int forEachFeatureBlock(long n, FeatureSink sink) throws IOException {
        return featFile == null ? 0 : OgbFeatures.forEachBlock(featFile, n, sink);
    }

    /** Receives the features of {@link #forEachFeatureBlock} a block of whole rows at a time, in node order. */
    public interface FeatureSink {
        /**
         * {@code count} floats of {@code block} from its start: {@code count / width} rows. The
         * block is reused for the next call.
         */
        void accept(float[] block, int count, int width) throws IOException;
    }

    /**
     * The width of the features (the values on the first row), or 0 without features; reads one line.
     */
    public int featureWidth() throws IOException {
        return featFile == null ? 0 : OgbFeatures.width(featFile);
    }

    /** int64 [n] labels ({@link Graph#UNLABELLED} for "nan"), or null without labels; {@code n} -1 when not known yet. */
    public Tensor labels(long n) throws IOException {
        return labelFile == null ? null : Tensors.longs(labelArray(n));
    }

    /**
     * Checks labels read by {@link #labels} ({@link LabelCheck}) and returns the class count.
     *
     * @param declared the declared class count, or -1 for the known dataset's, else the largest label + 1
     */
    public int classCount(Tensor labels, int declared) throws GraphFormatException {
        return LabelCheck.classCount(labels, declaredClasses(declared), labelFile.toString(), i -> "line " + (i + 1) + " (node " + i + ")");
    }

    private long[] labelArray(long n) throws IOException {
        Path f = labelFile;
        LongList labels = new LongList(n >= 0 ? (int) Math.min(n, Integer.MAX_VALUE - 8) : 1 << 16);
        try (NumericCsv csv = NumericCsv.open(f)) {
            while (csv.nextLine()) {
                float v = csv.readFloat("label");
                if (!csv.atEndOfLine()) {
                    int columns = 2;
                    for (csv.readFloat("label"); !csv.atEndOfLine(); csv.readFloat("label")) {
                        columns++;
                    }
                    throw new GraphFormatException(csv.at() + columns + " labels per node: multi-label data (ogbn-proteins) is not "
                            + "supported, one class per node is");
                }
                csv.endLine(1);
                if (!Float.isNaN(v) && (v != Math.rint(v) || Math.abs(v) > 1 << 24)) {
                    throw new GraphFormatException(csv.at() + "label " + v + " is not a class number");
                }
                labels.add(Float.isNaN(v) ? Graph.UNLABELLED : (long) v);
            }
        }
        if (n >= 0 && labels.size() != n) {
            throw new GraphFormatException(f + ": " + labels.size() + " labels for " + n + " nodes (one line per node)");
        }
        return labels.toArray();
    }

    /** The train, valid and test masks over {@code n} nodes, from the split's three files. */
    public boolean[][] masks(long n) throws IOException {
        return new boolean[][] {mask("train", n), mask("valid", n), mask("test", n)};
    }

    private boolean[] mask(String name, long n) throws IOException {
        Path f = find(splitDir, name);
        if (f == null) {
            throw new NoSuchFileException(splitDir.resolve(name + ".csv.gz").toString(), null, "missing file of the OGB split");
        }
        boolean[] m = new boolean[Math.toIntExact(n)];
        try (NumericCsv csv = NumericCsv.open(f)) {
            while (csv.nextLine()) {
                long v = csv.readLong("node id");
                csv.endLine(1);
                if (v < 0 || v >= n) {
                    throw new GraphFormatException(csv.at() + "node " + v + " is outside the graph's " + n + " nodes");
                }
                m[(int) v] = true;
            }
        }
        return m;
    }

    /** The file {@code name.csv.gz}, else {@code name.csv}, in {@code dir}; null when neither is there. */
    static Path find(Path dir, String name) {
        for (String ext : List.of(".csv.gz", ".csv")) {
            Path p = dir.resolve(name + ext);
            if (Files.isRegularFile(p)) {
                return p;
            }
        }
        return null;
    }

    /** The single count of {@code name.csv.gz} (a node-property dataset is one graph), or -1 without the file. */
    private static long count(Path raw, String name) throws IOException {
        Path f = find(raw, name);
        if (f == null) {
            return -1;
        }
        try (NumericCsv csv = NumericCsv.open(f)) {
            if (!csv.nextLine()) {
                throw new GraphFormatException(f + ": empty, expected one count");
            }
            long v = csv.readLong("count");
            csv.endLine(1);
            if (v < 0) {
                throw new GraphFormatException(csv.at() + "negative count " + v);
            }
            if (csv.nextLine()) {
                throw new GraphFormatException(csv.at() + "a second graph: a node-property dataset holds one graph, so one count");
            }
            return v;
        }
    }

    private static Path splitDir(Path dir, String split, Known known) throws IOException {
        Path root = dir.resolve("split");
        if (!Files.isDirectory(root)) {
            throw new NoSuchFileException(root.toString(), null, "missing split folder: the ogb package leaves split/NAME/train.csv.gz, "
                    + "valid.csv.gz and test.csv.gz there");
        }
        if (split != null) {
            Path p = root.resolve(split);
            if (!Files.isDirectory(p)) {
                throw new NoSuchFileException(p.toString(), null, "no such split (splits there: " + names(root) + ")");
            }
            return p;
        }
        List<String> names = names(root);
        if (names.size() == 1) {
            return root.resolve(names.get(0));
        }
        if (known != null && names.contains(known.split())) {
            return root.resolve(known.split());
        }
        throw new GraphFormatException(root + ": " + (names.isEmpty() ? "no split folder in it" : "several splits " + names + ": name one"));
    }

    private static List<String> names(Path root) throws IOException {
        try (Stream<Path> s = Files.list(root)) {
            return s.filter(Files::isDirectory).map(p -> p.getFileName().toString()).sorted().toList();
        }
    }
}
