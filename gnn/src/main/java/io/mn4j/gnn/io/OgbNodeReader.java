package io.mn4j.gnn.io;

import io.mn4j.gnn.graph.Csr;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.tensor.Tensors;
import java.io.IOException;
import java.nio.file.Path;
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
 * per line); any problem is a {@link GraphFormatException} (or a {@link java.nio.file.NoSuchFileException})
 * naming the file and, for a bad row, its line.
 */
public final class OgbNodeReader {
    private OgbNodeReader() {
    }

    /** Whether {@code dir} looks like an OGB dataset folder: it has {@code raw/edge.csv.gz} (or {@code raw/edge.csv}). */
    public static boolean isOgbFolder(Path dir) {
        return OgbFolder.isOgbFolder(dir);
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
        OgbFolder folder = OgbFolder.open(dir, split);
        long numNodes = folder.declaredNodes();
        long numEdges = folder.declaredEdges();
        if (numEdges > Integer.MAX_VALUE - 8) {
            throw new GraphFormatException(folder.edgeFile() + ": " + numEdges + " edges are more than one process holds in arrays");
        }
        int capacity = numEdges >= 0 ? (int) numEdges : 1 << 16;
        LongList src = new LongList(capacity), dst = new LongList(capacity);
        OgbFolder.EdgeScan scan = folder.forEachEdge((s, d) -> {
            src.add(s);
            dst.add(d);
        });
        try (PointerScope scope = new PointerScope()) {
            Tensor x = folder.features(numNodes);
            long n = numNodes >= 0 ? numNodes : x != null ? x.size(0) : -1;
            Tensor y = folder.labels(n);
            n = n >= 0 ? n : y != null ? y.size(0) : scan.maxId() + 1;
            folder.checkEdgeIds(scan, n);
            Csr adj = Csr.fromCoo(n, n, dst.toArray(), src.toArray(), null);
            Graph.Builder b = Graph.builder(adj).features(x);
            if (y != null) {
                b.labels(y).numClasses(folder.classCount(y, numClasses));
            }
            boolean[][] m = folder.masks(n);
            b.masks(Tensors.bools(m[0]), Tensors.bools(m[1]), Tensors.bools(m[2]));
            Graph g = b.build();
            adj.close();
            return g;
        }
    }
}
