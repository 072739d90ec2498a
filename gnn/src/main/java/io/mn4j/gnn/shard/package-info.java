/**
 * Full-graph GNN training on a graph partitioned across the ranks of a job.
 *
 * <p>A {@link io.mn4j.gnn.shard.GraphShardManager} holds what one rank owns of the graph (its
 * nodes, their in-edges cut into one shard per source partition, and which rows every other rank
 * needs) and aggregates over neighbourhoods across ranks with one aggregator per
 * {@link io.mn4j.gnn.shard.AggregationMode}: SAR (sequential aggregation and rematerialization,
 * memory falling linearly with workers), SEQUENTIAL (the same ring, keeping the autograd graph),
 * ONE_SHOT (a single exchange per layer) and PIPELINED (PipeGCN: training passes read the previous
 * epoch's boundary rows and gradients). Layers in {@code io.mn4j.gnn.nn} call it and run unchanged
 * in every mode.
 */
package io.mn4j.gnn.shard;
