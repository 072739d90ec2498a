/**
 * GNN layers on a {@link io.mn4j.gnn.shard.GraphShardManager}: the same layer code runs on one
 * process (a one-rank manager) and on a partitioned graph in every aggregation mode. Layers are
 * LibTorch modules: their parameters go to any LibTorch optimizer.
 */
package io.mn4j.gnn.nn;
