/**
 * Differentiable communication and multi-node models in the style of ChainerMN, on LibTorch's
 * autograd; rules of use in {@code functions/README.md}.
 *
 * <ul>
 *   <li>{@link io.mn4j.functions.Functions}: send/recv with delegate variables, pseudoConnect,
 *       list sends, and collectives (allgather, alltoall, bcast, gather, scatter, allreduce) whose
 *       backward passes perform the matching communication of gradients.</li>
 *   <li>{@link io.mn4j.functions.MultiNodeChainList}: a model made of components that receive
 *       their inputs from and send their outputs to other ranks, wired with send/recv/pseudoConnect
 *       (ChainerMN's {@code MultiNodeChainList}).</li>
 *   <li>Data parallelism: {@link io.mn4j.functions.MultiNodeOptimizer} (initial parameters from
 *       rank 0, gradients averaged over ranks before every step) and
 *       {@link io.mn4j.functions.MultiNodeBatchNorm} (batch statistics over all ranks).</li>
 * </ul>
 */
package io.mn4j.functions;
