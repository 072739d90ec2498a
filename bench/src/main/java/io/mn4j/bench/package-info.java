/**
 * Benchmark programs (mains, not tests): each measures mn4j against a reference in one run and
 * writes CSV lines, so that results are reported as ratios taken under the same conditions.
 * {@link io.mn4j.bench.CommBenchmark} compares the Communicator with a plain C MPI
 * program ({@code bench/c/commbench.c}, driven by {@code bench/comm.sh});
 * {@link io.mn4j.bench.AggregationBenchmark} (one process) measures gnn's sum-aggregation
 * kernel against LibTorch's sparse CSR matmul and index_select/index_add.
 */
package io.mn4j.bench;
