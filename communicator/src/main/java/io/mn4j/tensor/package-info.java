/**
 * Tensor helpers every mn4j module uses: {@link io.mn4j.tensor.Tensors} converts between Java
 * arrays and CPU tensors and reads shapes and dtypes; {@link io.mn4j.tensor.Scopes} moves native
 * handles between JavaCPP's pointer scopes.
 */
package io.mn4j.tensor;
