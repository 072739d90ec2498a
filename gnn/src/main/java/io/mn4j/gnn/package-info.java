/**
 * mn4j's graph neural network layer: graphs on LibTorch tensors ({@link io.mn4j.gnn.graph}),
 * readers and writers for numpy and graph files ({@link io.mn4j.gnn.io}), partitioning and
 * partition files ({@link io.mn4j.gnn.partition}) and the sparse aggregation kernel used by the
 * layers ({@link io.mn4j.gnn.kernel}). Distributed aggregation (shard managers, SAR, one-shot and
 * pipelined modes, {@link io.mn4j.gnn.shard}), distributed neighbour sampling
 * ({@link io.mn4j.gnn.sampling}), GNN layers ({@link io.mn4j.gnn.nn}) and trainers
 * ({@link io.mn4j.gnn.train}) build on these.
 */
package io.mn4j.gnn;
