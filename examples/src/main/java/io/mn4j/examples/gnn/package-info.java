/**
 * Pieces shared by the GNN examples ({@code Partition}, {@code TrainGnn}) and the GNN epoch
 * benchmark: where a graph comes from ({@link io.mn4j.examples.gnn.GraphOptions}), the default
 * partitioner ({@link io.mn4j.examples.gnn.Partitions}), and one rank's training set-up
 * ({@link io.mn4j.examples.gnn.GnnRun}).
 */
package io.mn4j.examples.gnn;
