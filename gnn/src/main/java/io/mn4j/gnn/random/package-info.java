/**
 * Random choices that are functions of what they decide: counter-based hashing
 * ({@link io.mn4j.gnn.random.CounterHash}) of a seed, a step, a site and the ids of the nodes or
 * edges concerned, and the keep masks of dropout drawn from it ({@link io.mn4j.gnn.random.KeepMask}).
 * Because nothing depends on a generator's state, one process and any number of ranks, threads or
 * shards draw the same masks and samples for the same nodes.
 */
package io.mn4j.gnn.random;
