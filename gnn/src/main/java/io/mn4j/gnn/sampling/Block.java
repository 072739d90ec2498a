package io.mn4j.gnn.sampling;

import io.mn4j.gnn.graph.Csr;
import io.mn4j.gnn.kernel.CsrAggregation;
import io.mn4j.tensor.Tensors;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;

/**
 * One layer's graph in a sample: edges from {@code numSrc} source nodes into {@code numDst}
 * destination nodes, where the destinations are the first {@code numDst} sources (DGL's
 * message-flow graph, PyG's sampled subgraph seen from one layer). Row {@code i} lists the sampled
 * in-neighbours of destination {@code i} as indices into the sources; a neighbour sampled twice
 * (a multi-edge) counts twice, as in the full graph. Holds native memory: close it (a
 * {@link Sample} closes its blocks), but only once every backward through {@link #mean}'s results
 * has run: the backward reads the block's matrix.
 */
public final class Block implements AutoCloseable {
    private final long[] srcNodes;
    private final int numDst;
    private final long[] rowptr;
    private final long[] col;
    private final CsrAggregation mean;

    Block(long[] srcNodes, int numDst, long[] rowptr, long[] col) {
        this.srcNodes = srcNodes;
        this.numDst = numDst;
        this.rowptr = rowptr;
        this.col = col;
        // In float64: the weights are rounded once, to the dtype of the rows they weigh.
        double[] weight = new double[col.length];
        for (int i = 0; i < numDst; i++) {
            long degree = rowptr[i + 1] - rowptr[i];
            for (long e = rowptr[i]; e < rowptr[i + 1]; e++) {
                weight[(int) e] = 1.0 / degree;
            }
        }
        try (PointerScope s = new PointerScope();
                Csr a = Csr.of(numDst, srcNodes.length, Tensors.longs(rowptr), Tensors.longs(col), Tensors.doubles(weight, weight.length))) {
            this.mean = CsrAggregation.of(a);
        }
    }

    /** Destination nodes: the first {@link #numDst()} source nodes. */
    public int numDst() {
        return numDst;
    }

    public int numSrc() {
        return srcNodes.length;
    }

    /** Global ids of the source nodes (a copy); the first {@link #numDst()} are the destinations. */
    public long[] srcNodes() {
        return srcNodes.clone();
    }

    /** Row offsets of the destinations' neighbour lists (a copy), {@code numDst + 1} entries. */
    public long[] rowptr() {
        return rowptr.clone();
    }

    /** The neighbour lists as indices into the sources (a copy). */
    public long[] col() {
        return col.clone();
    }

    /** Number of sampled edges. */
    public int numEdges() {
        return col.length;
    }

    /**
     * The mean of each destination's sampled neighbours' rows of {@code xSrc} [numSrc, f] (zero
     * for a destination without neighbours), [numDst, f]; differentiable in {@code xSrc}.
     */
    public Tensor mean(Tensor xSrc) {
        if (xSrc.dim() != 2 || xSrc.size(0) != srcNodes.length) {
            throw new IllegalArgumentException("block of " + srcNodes.length + " source nodes: expected their rows as ["
                    + srcNodes.length + ", f], got " + Tensors.shapeString(xSrc));
        }
        return mean.apply(xSrc);
    }

    /** The destinations' rows of {@code xSrc}: its first {@link #numDst()} rows (a view). */
    public Tensor dst(Tensor xSrc) {
        return xSrc.narrow(0, 0, numDst);
    }

    @Override
    public void close() {
        mean.close();
    }

    @Override
    public String toString() {
        return "Block[" + srcNodes.length + " sources -> " + numDst + " destinations, " + col.length + " edges]";
    }
}
