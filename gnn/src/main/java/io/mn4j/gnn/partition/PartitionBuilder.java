package io.mn4j.gnn.partition;

import io.mn4j.gnn.graph.Csr;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.tensor.Tensors;
import java.util.Arrays;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * A graph cut into partitions in memory, exactly as {@link PartitionWriter} lays them out: nodes
 * renumbered contiguously per partition (partition 0's first, in the {@link NodeOrder} asked for),
 * every edge stored with its destination's partition, the sources of a row sorted by new id. Builds one
 * partition's arrays at a time ({@link #part(int)}), so that a caller can write or send each and
 * free it before the next: the whole graph is held once, not twice.
 */
public final class PartitionBuilder {
    private final Graph graph;
    private final int parts;
    private final PartitionMetadata metadata;
    private final PartitionStats stats;
    private final long[] offsets;
    private final long[] newId;
    private final long[] byNewId;

    /** The node order of partitions written without one named. */
    public static final NodeOrder DEFAULT_ORDER = NodeOrder.NONE;

    /** The cut of {@code g} given by {@code assignment}, nodes in {@link #DEFAULT_ORDER}. */
    public PartitionBuilder(Graph g, int[] assignment, int parts, String method, long seed) {
        this(g, assignment, parts, method, seed, DEFAULT_ORDER);
    }

    /**
     * Prepares the cut of {@code g} given by {@code assignment} (the partition of every node).
     * The graph stays the caller's and must stay open while partitions are built.
     *
     * @param method partitioner name recorded in the metadata
     * @param seed partitioner seed recorded in the metadata
     * @param order the order of each partition's nodes among its new ids
     */
    public PartitionBuilder(Graph g, int[] assignment, int parts, String method, long seed, NodeOrder order) {
        this.graph = g;
        this.parts = parts;
        this.stats = PartitionStats.compute(g, assignment, parts);
        int n = Math.toIntExact(g.numNodes());
        offsets = new long[parts + 1];
        for (int v = 0; v < n; v++) offsets[assignment[v] + 1]++;
        for (int k = 0; k < parts; k++) offsets[k + 1] += offsets[k];
        long[] next = Arrays.copyOf(offsets, parts);
        newId = new long[n];
        byNewId = new long[n];
        for (int v = 0; v < n; v++) {
            long id = next[assignment[v]]++;
            newId[v] = id;
            byNewId[(int) id] = v;
        }
        if (order != NodeOrder.NONE) reorder(g.adjacency(), order);
        long[] nodesPer = new long[parts];
        for (int k = 0; k < parts; k++) nodesPer[k] = offsets[k + 1] - offsets[k];
        String featureType = !g.hasFeatures() ? "none" : Tensors.type(g.features()) == ScalarType.Double ? "float64" : "float32";
        metadata = new PartitionMetadata(PartitionMetadata.FORMAT_VERSION, parts, n, g.numEdges(), g.numFeatures(), featureType,
                g.numClasses(), g.hasLabels(), g.hasMasks(), g.edgeWeight() != null, method, seed, stats.edgeCut(), stats.totalCommVolume(),
                nodesPer, stats.partEdges(), offsets.clone());
    }

    /** Puts each partition's nodes in {@code order} within its range of new ids. */
    private void reorder(Csr adjacency, NodeOrder order) {
        long[] rp = adjacency.rowptrArray();
        int[] col = adjacency.colArray();
        for (int k = 0; k < parts; k++) {
            int first = (int) offsets[k];
            long[] ordered = order.order(rp, col, Arrays.copyOfRange(byNewId, first, (int) offsets[k + 1]));
            for (int i = 0; i < ordered.length; i++) {
                byNewId[first + i] = ordered[i];
                newId[(int) ordered[i]] = first + i;
            }
        }
    }

    /** The metadata of the whole cut. */
    public PartitionMetadata metadata() {
        return metadata;
    }

    /** Edge cut, balance and communication volume of the cut. */
    public PartitionStats stats() {
        return stats;
    }

    /** Number of partitions. */
    public int parts() {
        return parts;
    }

    /** Partition {@code k}'s nodes, in-edges and node data; the caller closes it. */
    public PartitionData part(int k) {
        if (k < 0 || k >= parts) throw new IllegalArgumentException("partition " + k + " of " + parts);
        int first = (int) offsets[k], nk = (int) (offsets[k + 1] - offsets[k]);
        long[] ids = Arrays.copyOfRange(byNewId, first, first + nk);
        long[] rp = graph.adjacency().rowptrArray();
        int[] col = graph.adjacency().colArray();
        int ek = Math.toIntExact(metadata.edges(k));
        long[] prow = new long[nk + 1];
        long[] pcol = new long[ek];
        long[] source = graph.edgeWeight() != null ? new long[ek] : null;
        int p = 0;
        for (int i = 0; i < nk; i++) {
            int v = (int) ids[i];
            int from = (int) rp[v], len = (int) (rp[v + 1] - rp[v]);
            // Sort the row by new source id, carrying the edge's index along for its weight.
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
            // Weights move by index, so they keep their dtype and exact values.
            Tensor w = source == null ? null : graph.edgeWeight().index_select(0, Tensors.longs(source));
            Csr adj = Csr.of(nk, graph.numNodes(), Tensors.longs(prow), Tensors.longs(pcol), w);
            Tensor x = graph.hasFeatures() ? graph.features().index_select(0, idsT) : null;
            Tensor y = graph.hasLabels() ? graph.labels().index_select(0, idsT) : null;
            boolean masks = graph.hasMasks();
            return new PartitionData(metadata, k, idsT, adj, x, y, masks ? graph.trainMask().index_select(0, idsT) : null,
                    masks ? graph.valMask().index_select(0, idsT) : null, masks ? graph.testMask().index_select(0, idsT) : null);
        }
    }
}
