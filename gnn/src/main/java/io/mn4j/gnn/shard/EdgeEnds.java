package io.mn4j.gnn.shard;

/**
 * The ids of the nodes at both ends of one step's edges, in the numbering random choices are keyed
 * by ({@link GraphShardManager#nodeIds(org.bytedeco.pytorch.Tensor)}): of each destination row of
 * the step and of each row of the block of sources it reads. An operator that drops edges at
 * random keys each edge by these ids, so every rank and every mode draws the same for an edge.
 */
public final class EdgeEnds {
    private final long[] dst;
    private final int dstFrom;
    private final long[] src;

    EdgeEnds(long[] dst, int dstFrom, long[] src) {
        this.dst = dst;
        this.dstFrom = dstFrom;
        this.src = src;
    }

    /** Ends with {@code dst[r]} the id of destination row r and {@code src[c]} that of column c (the arrays are not copied). */
    public static EdgeEnds of(long[] dst, long[] src) {
        return new EdgeEnds(dst, 0, src);
    }

    /** The id of the step's destination row {@code row}. */
    public long dst(long row) {
        return dst[dstFrom + Math.toIntExact(row)];
    }

    /** The id of the node whose row is {@code column} of the block (the edges' column index). */
    public long src(long column) {
        return src[Math.toIntExact(column)];
    }

    /** The ends of a step of rows {@code [from, ...)} of this one's. */
    EdgeEnds fromRow(long from) {
        return new EdgeEnds(dst, dstFrom + Math.toIntExact(from), src);
    }
}
