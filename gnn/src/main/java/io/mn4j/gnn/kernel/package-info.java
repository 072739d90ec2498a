/**
 * Sparse aggregation kernels. {@link io.mn4j.gnn.kernel.CsrAggregation} computes
 * {@code out = A · x} for a CSR matrix with LibTorch's {@code embedding_bag} (sum mode, CSR row
 * pointers as bag offsets, edge weights as per-sample weights) and makes it differentiable with a
 * backward that runs the same kernel on the transposed matrix, wired into LibTorch's autograd as a
 * {@link io.mn4j.functions.autograd.CustomFunction}.
 */
package io.mn4j.gnn.kernel;
