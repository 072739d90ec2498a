package io.mn4j.examples.gnn;

import io.mn4j.gnn.partition.MetisPartitioner;

/**
 * Choices the example programs make about partitioning. (Loading a partition on every rank with
 * one outcome for all is the library's {@code PartitionReader.load(comm, dir)}.)
 */
public final class Partitions {
    private Partitions() {
    }

    /** The partitioner used when none is named: METIS if {@code gpmetis} is installed, else the built-in LDG. */
    public static String defaultPartitioner() {
        return MetisPartitioner.isAvailable() ? "metis" : "ldg";
    }
}
