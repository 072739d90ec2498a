/**
 * Full-graph training of a {@link io.mn4j.gnn.nn.GnnModel} on a partitioned graph: identical
 * parameters on every rank at start, loss normalised by the global number of training nodes,
 * gradients summed across ranks, and metrics over all partitions.
 */
package io.mn4j.gnn.train;
