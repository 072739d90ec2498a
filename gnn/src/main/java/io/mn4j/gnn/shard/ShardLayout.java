package io.mn4j.gnn.shard;

import io.mn4j.communicator.Communicator;
import io.mn4j.gnn.graph.Csr;
import io.mn4j.gnn.partition.PartitionMetadata;
import io.mn4j.tensor.Scopes;
import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.IntFunction;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * How the graph is cut for this rank: partition p owns the global nodes
 * {@code [offsets[p], offsets[p+1])}, and shard j holds the in-edges of this rank's nodes whose
 * sources j owns. Which rows each side reads of the other, and the degrees GCN's weights need, are
 * exchanged once, at construction (collective).
 */
final class ShardLayout implements AutoCloseable {
    static final String UNWEIGHTED_ONLY = "but the shard manager aggregates unweighted graphs only (its GCN, SAGE and GAT"
            + " weightings count edges): it would ignore the weights; drop them (Graph.withEdgeWeight(null)) before partitioning";

    private final Communicator comm;
    private final int rank;
    private final int parts;
    private final long numLocal;
    private final long[] offsets;
    private final Shard[] shards;
    /** The local shard without stored self-loops (the shard itself when it stores none). */
    private final Csr localWithoutLoops;
    private final Tensor inDegree;
    /** In-degree without stored self-loops, float64: GCN's degree is this plus its one self-loop. */
    private final Tensor degreeWithoutLoops;

    /** Cuts {@code inEdges} into shards and exchanges rows and degrees with the partners. Collective over {@code comm}. */
    ShardLayout(Communicator comm, long[] offsets, Csr inEdges) {
        this.comm = comm;
        this.rank = comm.rank();
        this.parts = comm.size();
        this.offsets = offsets;
        this.numLocal = offsets[rank + 1] - offsets[rank];
        this.shards = cutShards(inEdges);
        this.localWithoutLoops = withoutSelfLoops(shards[rank].edges);
        try (PointerScope s = new PointerScope()) {
            this.inDegree = Scopes.own(inEdges.rowCounts().to(torch.ScalarType.Double));
            Tensor loops = shards[rank].edges.rowCounts().sub(localWithoutLoops.rowCounts());
            this.degreeWithoutLoops = Scopes.own(inDegree.sub(loops));
        }
        exchangeRowsAndDegrees();
    }

    /** Throws, naming what is wrong, unless {@code localInEdges} and {@code offsets} describe this rank's part of a graph. */
    static void checkInput(Communicator world, long[] offsets, Csr localInEdges) {
        if (localInEdges.hasWeight()) {
            throw new IllegalArgumentException("the in-edge matrix is weighted, " + UNWEIGHTED_ONLY);
        }
        if (offsets.length != world.size() + 1) {
            throw new IllegalArgumentException("partition offsets describe " + (offsets.length - 1)
                    + " partitions but the job has " + world.size() + " ranks");
        }
        boolean ordered = offsets[0] == 0;
        for (int p = 0; p < world.size(); p++) {
            ordered &= offsets[p] <= offsets[p + 1];
        }
        if (!ordered) {
            throw new IllegalArgumentException("partition offsets " + Arrays.toString(offsets) + " must start at 0 and not decrease");
        }
        long expected = offsets[world.rank() + 1] - offsets[world.rank()];
        if (localInEdges.numRows() != expected) {
            throw new IllegalArgumentException("rank " + world.rank() + " owns " + expected
                    + " nodes but its in-edge matrix has " + localInEdges.numRows() + " rows");
        }
        long numNodes = offsets[world.size()];
        Tensor col = localInEdges.col();
        if (col.numel() > 0) {
            try (PointerScope s = new PointerScope()) {
                long min = col.min().item_long(), max = col.max().item_long();
                if (min < 0 || max >= numNodes) {
                    throw new IllegalArgumentException("the in-edge matrix has source ids in [" + min + ", " + max
                            + "], outside the graph's nodes [0, " + numNodes + ")");
                }
            }
        }
    }

    /** {@code local} (square, local rows and columns) without its entries v→v; {@code local} itself when it has none. */
    private static Csr withoutSelfLoops(Csr local) {
        return local.diagonalCount() == 0 ? local : local.withoutDiagonal();
    }

    /** Splits the in-edges by the partition owning their source, compacting the source rows. */
    private Shard[] cutShards(Csr inEdges) {
        long[] rowptr = inEdges.rowptrArray();
        long[] src = Tensors.toLongArray(inEdges.col());
        int n = (int) numLocal;
        int[] edgesPer = new int[parts];
        int[] owner = new int[src.length];
        for (int e = 0; e < src.length; e++) {
            int p = PartitionMetadata.owner(offsets, src[e]);
            owner[e] = p;
            edgesPer[p]++;
        }
        Shard[] out = new Shard[parts];
        for (int p = 0; p < parts; p++) {
            // sorted distinct partner-local rows read by this shard
            long[] rows = new long[edgesPer[p]];
            int k = 0;
            for (int e = 0; e < src.length; e++) {
                if (owner[e] == p) {
                    rows[k++] = src[e] - offsets[p];
                }
            }
            long[] distinct = p == rank ? null : Arrays.stream(rows).sorted().distinct().toArray();
            long[] ptr = new long[n + 1];
            long[] col = new long[edgesPer[p]];
            int c = 0;
            for (int v = 0; v < n; v++) {
                for (long e = rowptr[v]; e < rowptr[v + 1]; e++) {
                    if (owner[(int) e] == p) {
                        long local = src[(int) e] - offsets[p];
                        col[c++] = distinct == null ? local : Arrays.binarySearch(distinct, local);
                    }
                }
                ptr[v + 1] = c;
            }
            long width = distinct == null ? numLocal : distinct.length;
            Csr edges = Csr.of(numLocal, width, ptr, col, null);
            Tensor need = Scopes.own(distinct == null ? torch.arange(new Scalar(numLocal)) : Tensors.longs(distinct));
            out[p] = new Shard(p, need, edges);
        }
        return out;
    }

    /** Tells every partner which of its rows we read; learns which of ours they read; their degrees (for GCN). */
    private void exchangeRowsAndDegrees() {
        List<Tensor> needs = new ArrayList<>(parts);
        for (Shard s : shards) {
            needs.add(s.partner == rank ? Tensors.longs(new long[0]) : s.needRows);
        }
        List<Tensor> asked = comm.alltoall(needs);
        List<Tensor> degrees = new ArrayList<>(parts);
        for (int p = 0; p < parts; p++) {
            shards[p].sendRows = Scopes.own(p == rank ? Tensors.longs(new long[0]) : asked.get(p));
            degrees.add(degreeWithoutLoops.index_select(0, shards[p].sendRows));
        }
        List<Tensor> theirDegrees = comm.alltoall(degrees);
        for (int p = 0; p < parts; p++) {
            shards[p].sourceDegree = Scopes.own(p == rank ? degreeWithoutLoops : theirDegrees.get(p));
        }
    }

    Communicator communicator() {
        return comm;
    }

    int rank() {
        return rank;
    }

    int parts() {
        return parts;
    }

    long numLocal() {
        return numLocal;
    }

    /** Global id of this rank's first node. */
    long firstNode() {
        return offsets[rank];
    }

    /** Global id of partition {@code p}'s first node. */
    long firstNode(int p) {
        return offsets[p];
    }

    long numNodes() {
        return offsets[parts];
    }

    /** The shard of the in-edges whose sources partition {@code partner} owns ({@code rank()}: the local shard). */
    Shard shard(int partner) {
        return shards[partner];
    }

    Csr localWithoutLoops() {
        return localWithoutLoops;
    }

    /** In-degree of every local node (edges into it, over all partitions, stored self-loops included), float64. */
    Tensor inDegree() {
        return inDegree;
    }

    Tensor degreeWithoutLoops() {
        return degreeWithoutLoops;
    }

    /** Rows this rank sends to {@code partner} per exchange of one feature row each. */
    long rowsSentTo(int partner) {
        return partner == rank ? 0 : shards[partner].sendRows.size(0);
    }

    /** Rows this rank receives from {@code partner} per exchange. */
    long rowsReceivedFrom(int partner) {
        return partner == rank ? 0 : shards[partner].numNeeded();
    }

    /** Throws unless {@code x} holds one row of this rank's nodes each, as {@code [numLocal, f]}. */
    void checkRows(Tensor x, String op) {
        if (x.dim() != 2 || x.size(0) != numLocal) {
            throw new IllegalArgumentException(op + " on rank " + rank + ": expected features of this rank's "
                    + numLocal + " nodes as [" + numLocal + ", f], got " + Tensors.shapeString(x));
        }
    }

    /** Adds the gradients partner p sent for the rows it reads into those rows of {@code into}. */
    void addRowGradients(Tensor into, int p, Tensor grad) {
        try (Tensor typed = grad.to(into.scalar_type())) {
            into.index_add_(0, shards[p].sendRows, typed);
        }
    }

    /** The blocks of every partner (not this rank's), concatenated in partner order. */
    Tensor catPartners(IntFunction<Tensor> blockOf) {
        List<Tensor> remote = new ArrayList<>(parts - 1);
        for (int p = 0; p < parts; p++) {
            if (p != rank) {
                remote.add(blockOf.apply(p));
            }
        }
        return cat(remote);
    }

    static Tensor cat(List<Tensor> ts) {
        return torch.cat(new TensorVector(ts.toArray(new Tensor[0])));
    }

    /** Releases the shards and degrees (not the communicator, which the manager owns). */
    @Override
    public void close() {
        for (Shard s : shards) {
            s.close();
        }
        Scopes.closeAll(inDegree, degreeWithoutLoops);
        if (localWithoutLoops != shards[rank].edges) {
            localWithoutLoops.close();
        }
    }
}
