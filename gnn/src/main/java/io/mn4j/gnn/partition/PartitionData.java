package io.mn4j.gnn.partition;

import io.mn4j.gnn.graph.Csr;
import io.mn4j.tensor.Scopes;
import org.bytedeco.pytorch.Tensor;

/**
 * One loaded partition (see {@link PartitionWriter} for the layout): the nodes this partition owns
 * (new ids {@code [nodeOffset, nodeOffset + numLocalNodes)}), the in-edges of those nodes with
 * sources as new global ids, and the node data. Tensors are owned by this object; {@link #close()}
 * releases them.
 */
public final class PartitionData implements AutoCloseable {
    private final PartitionMetadata metadata;
    private final int part;
    private final Tensor originalIds;
    private final Csr adjacency;
    private final Tensor features, labels, trainMask, valMask, testMask;

    PartitionData(PartitionMetadata metadata, int part, Tensor originalIds, Csr adjacency, Tensor features, Tensor labels, Tensor trainMask,
            Tensor valMask, Tensor testMask) {
        this.metadata = metadata;
        this.part = part;
        this.originalIds = Scopes.own(originalIds);
        this.adjacency = adjacency;
        this.features = Scopes.own(features);
        this.labels = Scopes.own(labels);
        this.trainMask = Scopes.own(trainMask);
        this.valMask = Scopes.own(valMask);
        this.testMask = Scopes.own(testMask);
    }

    public PartitionMetadata metadata() { return metadata; }

    /** This partition's index. */
    public int part() { return part; }

    public int numParts() { return metadata.numParts(); }

    /** First new id owned here. */
    public long nodeOffset() { return metadata.offset(part); }

    public long numLocalNodes() { return metadata.nodes(part); }

    public long numLocalEdges() { return metadata.edges(part); }

    /** Nodes of the whole graph. */
    public long numGlobalNodes() { return metadata.numNodes(); }

    /** int64 [numLocalNodes]: original id of local node {@code i} (new id {@code nodeOffset + i}). */
    public Tensor originalIds() { return originalIds; }

    /**
     * In-edges of the owned nodes: a {@code numLocalNodes x numGlobalNodes} CSR, row {@code i} =
     * local node {@code i}, columns = sources as new global ids, optional weights.
     */
    public Csr adjacency() { return adjacency; }

    /** int64 [numLocalNodes+1]. */
    public Tensor rowptr() { return adjacency.rowptr(); }

    /** int64 [numLocalEdges], new global ids of the sources. */
    public Tensor col() { return adjacency.col(); }

    /** [numLocalEdges] or null. */
    public Tensor edgeWeight() { return adjacency.weight(); }

    /** [numLocalNodes, f] or null. */
    public Tensor features() { return features; }

    /** int64 [numLocalNodes] or null. */
    public Tensor labels() { return labels; }

    public Tensor trainMask() { return trainMask; }

    public Tensor valMask() { return valMask; }

    public Tensor testMask() { return testMask; }

    /** The partition owning new global id {@code v}. */
    public int owner(long v) { return metadata.owner(v); }

    /** Whether new global id {@code v} is owned here. */
    public boolean isLocal(long v) {
        return v >= nodeOffset() && v < nodeOffset() + numLocalNodes();
    }

    @Override
    public void close() {
        adjacency.close();
        Scopes.closeAll(originalIds, features, labels, trainMask, valMask, testMask);
    }

    @Override
    public String toString() {
        return "PartitionData[part " + part + "/" + numParts() + ", nodes=" + numLocalNodes() + " from " + nodeOffset() + ", edges="
                + numLocalEdges() + "]";
    }
}
