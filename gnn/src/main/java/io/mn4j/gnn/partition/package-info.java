/**
 * Graph partitioning for full-graph distributed training, where every edge belongs to its
 * destination's partition.
 *
 * <ul>
 *   <li>{@link io.mn4j.gnn.partition.Partitioner}: {@code partition(graph, parts, seed) -> int[]};
 *       {@link io.mn4j.gnn.partition.MetisPartitioner} (Debian's {@code gpmetis}, the reference),
 *       {@link io.mn4j.gnn.partition.LdgPartitioner} (built-in streaming LDG with restreaming),
 *       {@link io.mn4j.gnn.partition.RangePartitioner}, {@link io.mn4j.gnn.partition.RandomPartitioner};
 *       {@link io.mn4j.gnn.partition.Partitioners#byName} picks one by name.
 *   <li>{@link io.mn4j.gnn.partition.PartitionStats}: edge cut, node/edge balance and the
 *       communication volume (boundary rows per partition pair).
 *   <li>Partition directories: {@link io.mn4j.gnn.partition.PartitionWriter} writes
 *       {@code metadata.json} plus one folder of {@code .npy} arrays per partition (nodes renumbered
 *       contiguously per partition, mapping to original ids kept);
 *       {@link io.mn4j.gnn.partition.PartitionReader} loads one partition, reading only its own
 *       folder, into a {@link io.mn4j.gnn.partition.PartitionData}, and fails with a
 *       {@link io.mn4j.gnn.partition.PartitionFormatException} naming the file on any
 *       inconsistency; a host needs only the folders of its own ranks.
 *   <li>Without a shared file system: {@link io.mn4j.gnn.partition.PartitionBuilder} cuts a graph
 *       in memory, one partition at a time, and {@link io.mn4j.gnn.partition.PartitionScatter}
 *       sends every rank its own over MPI.
 * </ul>
 */
package io.mn4j.gnn.partition;
