/**
 * Custom autograd functions written in Java on top of LibTorch's own engine, without C++:
 * {@link io.mn4j.functions.autograd.CustomFunction} connects outputs computed outside autograd
 * (for example received over MPI) to their inputs with a backward pass written as a Java lambda,
 * using node pre-hooks on O(1) view operations. Every differentiable communication of mn4j is
 * built on it; it is public so that other layers (GNN aggregation with rematerialized backward)
 * can define their own.
 */
package io.mn4j.functions.autograd;
