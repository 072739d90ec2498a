package io.mn4j.gnn.partition;

import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.io.Npy;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
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
 * <p>Nodes are renumbered contiguously: partition 0's nodes get new ids {@code 0..n_0-1}, partition
 * 1's the next {@code n_1}, and so on, within a partition in increasing original id or in a
 * {@link NodeOrder} of locality; {@code node_ids.npy} maps back.
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

    /** Writes the partitions of {@code g} given by {@code assignment}, nodes in {@link PartitionBuilder#DEFAULT_ORDER}. */
    public static PartitionMetadata write(Path dir, Graph g, int[] assignment, int parts, String method, long seed) throws IOException {
        return write(dir, g, assignment, parts, method, seed, PartitionBuilder.DEFAULT_ORDER);
    }

    /**
     * Writes the partitions of {@code g} given by {@code assignment}.
     *
     * @param method partitioner name recorded in the metadata
     * @param seed partitioner seed recorded in the metadata
     * @param order the order of each partition's nodes among its new ids
     * @return the metadata written
     */
    public static PartitionMetadata write(Path dir, Graph g, int[] assignment, int parts, String method, long seed, NodeOrder order)
            throws IOException {
        return write(dir, new PartitionBuilder(g, assignment, parts, method, seed, order));
    }

    /** Writes the partitions of a cut already prepared (whose {@link PartitionBuilder#stats()} a caller may have shown). */
    public static PartitionMetadata write(Path dir, PartitionBuilder cut) throws IOException {
        Files.createDirectories(dir);
        Files.deleteIfExists(dir.resolve(PartitionMetadata.FILE));
        for (int k = 0; k < cut.parts(); k++) {
            try (PartitionData part = cut.part(k)) {
                writeArrays(dir, part);
            }
        }
        PartitionMetadata m = cut.metadata();
        m.write(dir);
        LOG.info("wrote {} partitions to {}: {}", cut.parts(), dir, cut.stats());
        return m;
    }

    /**
     * Writes one partition, {@code part-K/} and {@code metadata.json}, into {@code dir}: a node's
     * copy of only the partitions its ranks load. Ranks of one node may write their partitions of
     * the same cut into the same directory at once (the metadata is replaced atomically).
     */
    public static void writePart(Path dir, PartitionData part) throws IOException {
        Files.createDirectories(dir);
        writeArrays(dir, part);
        part.metadata().write(dir);
    }

    private static void writeArrays(Path dir, PartitionData part) throws IOException {
        Path pd = dir.resolve(partDir(part.part()));
        Files.createDirectories(pd);
        Npy.write(pd.resolve("node_ids.npy"), part.originalIds());
        Npy.write(pd.resolve("rowptr.npy"), part.rowptr());
        Npy.write(pd.resolve("col.npy"), part.col());
        if (part.edgeWeight() != null) Npy.write(pd.resolve("edge_weight.npy"), part.edgeWeight());
        if (part.features() != null) Npy.write(pd.resolve("features.npy"), part.features());
        if (part.labels() != null) Npy.write(pd.resolve("labels.npy"), part.labels());
        if (part.trainMask() != null) {
            Npy.write(pd.resolve("train_mask.npy"), part.trainMask());
            Npy.write(pd.resolve("val_mask.npy"), part.valMask());
            Npy.write(pd.resolve("test_mask.npy"), part.testMask());
        }
    }

    /** Partitions {@code g} with {@code partitioner} and writes the result; returns the metadata. */
    public static PartitionMetadata partitionAndWrite(Path dir, Graph g, Partitioner partitioner, int parts, long seed) throws IOException {
        int[] a = partitioner.partition(g, parts, seed);
        return write(dir, g, a, parts, partitioner.name(), seed);
    }
}
