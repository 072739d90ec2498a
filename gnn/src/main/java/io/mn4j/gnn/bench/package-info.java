/**
 * Benchmark programs for the gnn module (to move to the examples module):
 * {@link io.mn4j.gnn.bench.AggregationBenchmark} measures sum-aggregation throughput of the mn4j
 * kernel against LibTorch's sparse CSR matmul and index_select/index_add.
 */
package io.mn4j.gnn.bench;
