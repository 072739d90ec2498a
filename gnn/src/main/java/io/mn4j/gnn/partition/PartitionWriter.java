package io.mn4j.gnn.partition;

import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.io.Npy;
import io.mn4j.tensor.Tensors;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes a partitioned graph as a directory that each rank can load on its own:
 *
 * <pre>
 * DIR/metadata.json           see {@link PartitionMetadata}
 * DIR/part-K/node_ids.npy     int64 [n_K]    original id of each owned node, in new-id order
 * DIR/part-K/rowptr.npy       int64 [n_K+1]  CSR of the in-edges of the owned nodes (local rows)
 * DIR/part-K/col.npy          int64 [e_K]    source of each in-edge, as a new (global) id
 * DIR/part-K/edge_weight.npy  float [e_K]    if the graph is weighted
 * DIR/part-K/features.npy     float [n_K, f] if the graph has features
 * DIR/part-K/labels.npy       int64 [n_K]    if the graph has labels
 * DIR/part-K/train_mask.npy, val_mask.npy, test_mask.npy   bool [n_K], if the graph has masks
 * </pre>
 *
 * <p>Nodes are renumbered contiguously: partition 0's nodes (in increasing original id) get new ids
 * {@code 0..n_0-1}, partition 1's the next {@code n_1}, and so on; {@code node_ids.npy} maps back.
 * Every edge is stored with its destination's partition; sources within a row are sorted by new
 * id. All arrays are plain {@code .npy} files, readable by numpy. {@code metadata.json} is written
 * last (and removed first when overwriting), so an interrupted write is never mistaken for a
 * complete one.
 */
public final class PartitionWriter {
    private static final Logger LOG = LoggerFactory.getLogger(PartitionWriter.class);

    private PartitionWriter() {}

    /** Name of partition {@code k}'s folder. */
    public static String partDir(int k) {
        return "part-" + k;
    }

    /**
     * Writes the partitions of {@code g} given by {@code assignment}.
     *
     * @param method partitioner name recorded in the metadata
     * @param seed partitioner seed recorded in the metadata
     * @return the metadata written
     */
    public static PartitionMetadata write(Path dir, Graph g, int[] assignment, int parts, String method, long seed) throws IOException {
        PartitionStats stats = PartitionStats.compute(g, assignment, parts);
        int n = Math.toIntExact(g.numNodes());
        Files.createDirectories(dir);
        Files.deleteIfExists(dir.resolve(PartitionMetadata.FILE));

        long[] offsets = new long[parts + 1];
        for (int v = 0; v < n; v++) offsets[assignment[v] + 1]++;
        for (int k = 0; k < parts; k++) offsets[k + 1] += offsets[k];
        long[] next = Arrays.copyOf(offsets, parts);
        long[] newId = new long[n];
        long[] byNewId = new long[n];
        for (int v = 0; v < n; v++) {
            long id = next[assignment[v]]++;
            newId[v] = id;
            byNewId[(int) id] = v;
        }
        long[] rp = g.adjacency().rowptrArray();
        int[] col = g.adjacency().colArray();
        boolean weighted = g.edgeWeight() != null;
        long[] partEdges = stats.partEdges();

        for (int k = 0; k < parts; k++) {
            Path pd = dir.resolve(partDir(k));
            Files.createDirectories(pd);
            int first = (int) offsets[k], nk = (int) (offsets[k + 1] - offsets[k]);
            long[] ids = Arrays.copyOfRange(byNewId, first, first + nk);
            int ek = Math.toIntExact(partEdges[k]);
            long[] prow = new long[nk + 1];
            long[] pcol = new long[ek];
            long[] source = weighted ? new long[ek] : null;
            int p = 0;
            for (int i = 0; i < nk; i++) {
                int v = (int) ids[i];
                int from = (int) rp[v], len = (int) (rp[v + 1] - rp[v]);
                // Sort the row by new source id, carrying the weights along.
                long[] keys = new long[len];
                for (int e = 0; e < len; e++) keys[e] = (newId[col[from + e]] << 32) | e;
                Arrays.sort(keys);
                for (int e = 0; e < len; e++) {
                    pcol[p] = keys[e] >>> 32;
                    if (source != null) source[p] = from + (keys[e] & 0xffffffffL);
                    p++;
                }
                prow[i + 1] = p;
            }
            try (PointerScope s = new PointerScope()) {
                Tensor idsT = Tensors.longs(ids);
                Npy.write(pd.resolve("node_ids.npy"), idsT);
                Npy.write(pd.resolve("rowptr.npy"), Tensors.longs(prow));
                Npy.write(pd.resolve("col.npy"), Tensors.longs(pcol));
                if (source != null) {
                    // Weights move by index, so they keep their dtype and exact values.
                    Npy.write(pd.resolve("edge_weight.npy"), g.edgeWeight().index_select(0, Tensors.longs(source)));
                }
                if (g.hasFeatures()) Npy.write(pd.resolve("features.npy"), g.features().index_select(0, idsT));
                if (g.hasLabels()) Npy.write(pd.resolve("labels.npy"), g.labels().index_select(0, idsT));
                if (g.hasMasks()) {
                    Npy.write(pd.resolve("train_mask.npy"), g.trainMask().index_select(0, idsT));
                    Npy.write(pd.resolve("val_mask.npy"), g.valMask().index_select(0, idsT));
                    Npy.write(pd.resolve("test_mask.npy"), g.testMask().index_select(0, idsT));
                }
            }
        }
        long[] nodesPer = new long[parts];
        for (int k = 0; k < parts; k++) nodesPer[k] = offsets[k + 1] - offsets[k];
        String featureType = !g.hasFeatures() ? "none" : Tensors.type(g.features()) == org.bytedeco.pytorch.global.torch.ScalarType.Double ? "float64" : "float32";
        PartitionMetadata m = new PartitionMetadata(PartitionMetadata.FORMAT_VERSION, parts, n, g.numEdges(), g.numFeatures(), featureType,
                g.numClasses(), g.hasLabels(), g.hasMasks(), g.edgeWeight() != null, method, seed, stats.edgeCut(), stats.totalCommVolume(),
                nodesPer, partEdges, offsets);
        m.write(dir);
        LOG.info("wrote {} partitions of {} to {}: {}", parts, g, dir, stats);
        return m;
    }

    /** Partitions {@code g} with {@code partitioner} and writes the result; returns the metadata. */
    public static PartitionMetadata partitionAndWrite(Path dir, Graph g, Partitioner partitioner, int parts, long seed) throws IOException {
        int[] a = partitioner.partition(g, parts, seed);
        return write(dir, g, a, parts, partitioner.name(), seed);
    }
}
