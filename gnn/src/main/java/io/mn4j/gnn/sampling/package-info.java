/**
 * Mini-batch training on a partitioned graph, as PyG's distributed training does it: a
 * {@link io.mn4j.gnn.sampling.DistNeighborSampler} samples the neighbourhoods of each batch's seed
 * nodes hop by hop, asking the rank that owns each node for its sampled in-neighbours, and
 * {@link io.mn4j.gnn.sampling.DistNodeData} fetches the features of the sampled nodes from their
 * owners. Over MPI both are bulk-synchronous: per hop one all-to-all of requests and one of
 * replies, so every rank takes part in every batch (with no seeds if it has run out of its own).
 * A sample is a list of {@link io.mn4j.gnn.sampling.Block}s, bipartite graphs from the input layer
 * to the seeds, on which SAGE layers run ({@link io.mn4j.gnn.nn.GnnModel#forward(java.util.List,
 * org.bytedeco.pytorch.Tensor, boolean)}).
 */
package io.mn4j.gnn.sampling;
