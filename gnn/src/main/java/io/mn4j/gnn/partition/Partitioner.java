package io.mn4j.gnn.partition;

import io.mn4j.gnn.graph.Graph;

/**
 * Assigns every node of a graph to one of {@code parts} partitions.
 *
 * <p>Partitioners treat the graph as undirected (an edge in either direction ties two nodes). The
 * result is an array {@code assignment} with {@code assignment[v]} in {@code [0, parts)}; every
 * node is in exactly one partition. Results are reproducible for a given seed.
 */
public interface Partitioner {

    /**
     * Partitions the graph.
     *
     * @param parts number of partitions, at least 1
     * @param seed seed for any randomness (ignored by deterministic partitioners)
     * @return the partition of every node
     * @throws PartitioningException if the partitioner cannot run (for example a missing tool)
     */
    int[] partition(Graph g, int parts, long seed);

    /** Short name, as used on command lines and in partition metadata (e.g. {@code metis}). */
    String name();
}
