/**
 * Graphs on LibTorch tensors. {@link io.mn4j.gnn.graph.Csr} is a sparse matrix in CSR form;
 * {@link io.mn4j.gnn.graph.Graph} is a graph whose adjacency is the CSR of in-edges (row = destination,
 * column = source) plus optional node features, labels and train/val/test masks, with helpers to
 * add self loops, symmetrize, compute degrees and transpose. {@link io.mn4j.gnn.graph.SyntheticGraphs}
 * generates large reproducible planted-partition graphs.
 */
package io.mn4j.gnn.graph;
