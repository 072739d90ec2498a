package io.mn4j.gnn.io;

import io.mn4j.gnn.graph.Csr;
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
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;

/**
 * Reads an OGB node-property-prediction dataset folder as the {@code ogb} package leaves it on disk
 * (nothing is downloaded):
 *
 * <pre>
 * DIR/raw/edge.csv.gz           one edge "src,dst" per line (node ids from 0)
 * DIR/raw/num-node-list.csv.gz  the node count (optional: else the rows of node-feat, node-label, or the largest id + 1)
 * DIR/raw/num-edge-list.csv.gz  the edge count (optional: checked when there)
 * DIR/raw/node-feat.csv.gz      one row of f numbers per node (optional)
 * DIR/raw/node-label.csv.gz     one class per node; "nan" for a node without one (optional)
 * DIR/split/NAME/train.csv.gz, valid.csv.gz, test.csv.gz   one node id per line
 * </pre>
 *
 * Each file may also be there uncompressed, without {@code .gz}. Edges are kept as stored: directed
 * {@code src -> dst}, as ogb's loaders return them before they add inverse edges for the datasets
 * whose files store each undirected edge once ({@code ogbn-products}); call {@link Graph#symmetrize()}
 * for an undirected graph (the programs' {@code --data DIR} does, as for every file). A missing
 * label becomes {@link Graph#UNLABELLED}; labels pass {@link LabelCheck}, against the class count
 * of the known datasets ({@code ogbn-arxiv} 40, {@code ogbn-products} 47, {@code ogbn-papers100M}
 * 172) when the folder is one of them. The split is the folder's only one under {@code split/},
 * else the known dataset's, else the one named. Files are read streaming (gzip input, no string
 * per line); any problem is a {@link GraphFormatException} (or a {@link NoSuchFileException})
 * naming the file and, for a bad row, its line.
 */
public final class OgbNodeReader {
    /** Class count and split of the OGB node datasets with one label per node, by folder name. */
    private static final Map<String, Known> KNOWN = Map.of(
            "ogbn_arxiv", new Known(40, "time"),
            "ogbn_products", new Known(47, "sales_ranking"),
            "ogbn_papers100m", new Known(172, "time"));

    private record Known(int classes, String split) {
    }

    private OgbNodeReader() {
    }

    /** Whether {@code dir} looks like an OGB dataset folder: it has {@code raw/edge.csv.gz} (or {@code raw/edge.csv}). */
    public static boolean isOgbFolder(Path dir) {
        return Files.isDirectory(dir) && find(dir.resolve("raw"), "edge") != null;
    }

    /** Reads the folder with its split and, for a known dataset, its class count. */
    public static Graph read(Path dir) throws IOException {
        return read(dir, null, -1);
    }

    /**
     * Reads the folder.
     *
     * @param split the split's folder name under {@code split/}, or null for the only one (or the known dataset's)
     * @param numClasses the declared class count, or -1 for the known dataset's, else the largest label + 1
     */
    public static Graph read(Path dir, String split, int numClasses) throws IOException {
        Path raw = dir.resolve("raw");
        Path edgeFile = find(raw, "edge");
        if (edgeFile == null) {
            String why = Files.isDirectory(raw.resolve("relations")) ? "heterogeneous OGB graphs (ogbn-mag) are not supported"
                    : "no " + raw.resolve("edge.csv.gz");
            throw new GraphFormatException(dir + ": not an OGB node-property dataset folder: " + why
                    + " (expected raw/edge.csv.gz, raw/node-feat.csv.gz, raw/node-label.csv.gz and split/NAME/ as the ogb package leaves them)");
        }
        Known known = KNOWN.get(dir.toAbsolutePath().normalize().getFileName().toString().toLowerCase(Locale.ROOT).replace('-', '_'));
        int declared = numClasses >= 0 ? numClasses : known != null ? known.classes() : -1;
        long numNodes = count(raw, "num-node-list");
        long numEdges = count(raw, "num-edge-list");
        Edges edges = readEdges(edgeFile, numNodes, numEdges);
        try (PointerScope scope = new PointerScope()) {
            Path featFile = find(raw, "node-feat");
            Tensor x = featFile == null ? null : OgbFeatures.read(featFile, numNodes);
            long n = numNodes >= 0 ? numNodes : x != null ? x.size(0) : -1;
            Path labelFile = find(raw, "node-label");
            Tensor y = labelFile == null ? null : readLabels(labelFile, n);
            n = n >= 0 ? n : y != null ? y.size(0) : edges.maxId + 1;
            if (edges.maxId >= n) {
                throw new GraphFormatException(edgeFile + ":" + edges.maxIdLine + ": node " + edges.maxId + " is not below the "
                        + n + " nodes of " + (numNodes >= 0 ? "num-node-list" : featFile != null ? featFile.getFileName() : labelFile.getFileName()));
            }
            Path splitDir = splitDir(dir, split, known);
            Csr adj = Csr.fromCoo(n, n, edges.dst, edges.src, null);
            Graph.Builder b = Graph.builder(adj).features(x);
            if (y != null) {
                b.labels(y).numClasses(LabelCheck.classCount(y, declared, labelFile.toString(), i -> "line " + (i + 1) + " (node " + i + ")"));
            }
            b.masks(mask(splitDir, "train", n), mask(splitDir, "valid", n), mask(splitDir, "test", n));
            Graph g = b.build();
            adj.close();
            return g;
        }
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

    private static Path require(Path dir, String name) throws NoSuchFileException {
        Path p = find(dir, name);
        if (p == null) {
            throw new NoSuchFileException(dir.resolve(name + ".csv.gz").toString(), null, "missing file of the OGB split");
        }
        return p;
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

    /** Stored edges, and the largest node id with the line where it first occurs. */
    private record Edges(long[] src, long[] dst, long maxId, long maxIdLine) {
    }

    private static Edges readEdges(Path f, long numNodes, long numEdges) throws IOException {
        if (numEdges > Integer.MAX_VALUE - 8) {
            throw new GraphFormatException(f + ": " + numEdges + " edges are more than one process holds in arrays");
        }
        int capacity = numEdges >= 0 ? (int) numEdges : 1 << 16;
        LongList src = new LongList(capacity), dst = new LongList(capacity);
        long maxId = -1, maxIdLine = 0;
        try (NumericCsv csv = NumericCsv.open(f)) {
            while (csv.nextLine()) {
                long s = csv.readLong("source node");
                long d = csv.readLong("destination node");
                csv.endLine(2);
                long hi = Math.max(s, d);
                if (Math.min(s, d) < 0 || numNodes >= 0 && hi >= numNodes) {
                    throw new GraphFormatException(csv.at() + "edge " + s + "," + d + ": node ids must be in [0, "
                            + (numNodes >= 0 ? numNodes + ") (num-node-list)" : "n)"));
                }
                if (hi > maxId) {
                    maxId = hi;
                    maxIdLine = csv.line();
                }
                src.add(s);
                dst.add(d);
            }
        }
        if (numEdges >= 0 && src.size() != numEdges) {
            throw new GraphFormatException(f + ": " + src.size() + " edges, but num-edge-list says " + numEdges);
        }
        return new Edges(src.toArray(), dst.toArray(), maxId, maxIdLine);
    }

    /** int64 [n] labels ({@link Graph#UNLABELLED} for "nan"); {@code n} -1 when not known yet. */
    private static Tensor readLabels(Path f, long n) throws IOException {
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
        return Tensors.longs(labels.toArray());
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

    private static Tensor mask(Path splitDir, String name, long n) throws IOException {
        Path f = require(splitDir, name);
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
        return Tensors.bools(m);
    }
}
