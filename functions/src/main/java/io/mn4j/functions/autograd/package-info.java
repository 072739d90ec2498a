/**
 * Backward passes written in Java on LibTorch's own autograd engine, without C++: the one place
 * for this plumbing, used by the differentiable communication of {@code io.mn4j.functions} and by
 * the GNN layers.
 *
 * <ul>
 *   <li>{@link io.mn4j.functions.autograd.CustomFunction}: outputs computed outside autograd (over
 *       MPI, for example) joined to their inputs, with a {@link io.mn4j.functions.autograd.Backward}
 *       lambda as their backward pass.</li>
 *   <li>{@link io.mn4j.functions.autograd.GradientBridge}: gradient contributions autograd cannot
 *       see, added to an input's gradient once every attached value's gradient is known.</li>
 *   <li>{@link io.mn4j.functions.autograd.Pins}: tensors that tell their owner when LibTorch frees
 *       them, so that the Java hooks a graph needs live exactly as long as the graph.</li>
 * </ul>
 * How they are wired, and why it costs O(1) per tensor: {@code functions/README.md}, "How it works".
 */
package io.mn4j.functions.autograd;
