/**
 * Training a {@link io.mn4j.gnn.nn.GnnModel} on a partitioned graph: full-graph
 * ({@link io.mn4j.gnn.train.FullGraphTrainer}, one step per epoch) or on sampled mini-batches
 * ({@link io.mn4j.gnn.train.MiniBatchTrainer}). Both start from identical parameters on every
 * rank, normalise the loss by the global number of seeds, sum gradients across ranks, and report
 * metrics over all partitions.
 */
package io.mn4j.gnn.train;
