/**
 * The {@link io.mn4j.communicator.Communicator}: point-to-point and collective communication of
 * LibTorch tensors and Java objects over Open MPI's Java bindings.
 *
 * <p>Shapes and dtypes travel with the data, so receivers never need to know them in advance;
 * contiguous CPU tensors are sent from and received into their own memory (no copy); messages
 * larger than MPI's {@code int} count are split into chunks. Nothing above this package touches
 * {@code mpi.*} directly, so another transport can be added here without changing the layers above.
 */
package io.mn4j.communicator;
