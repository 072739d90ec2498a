/**
 * The {@link io.mn4j.communicator.Communicator}: point-to-point and collective communication of
 * LibTorch tensors and Java objects over Open MPI's Java bindings.
 *
 * <p>Shapes and dtypes travel with the data, so receivers never need to know them in advance;
 * contiguous CPU tensors are sent from and received into their own memory (no copy); messages
 * larger than MPI's {@code int} count are split into chunks. Nothing above this package touches
 * {@code mpi.*} directly, so another transport can be added here without changing the layers above.
 *
 * <p>Inside, from the API down: {@code Communicator} (the public calls, their counters, and
 * {@code MpiCalls}, the gate every call into MPI passes); {@code CheckedPointToPoint} and
 * {@code CheckedCollectives}, which make a bad argument fail on every rank it concerns
 * ({@code CrossRankChecks}, {@code AgreementRound}); the backends that move the bytes,
 * {@code Wire} (headers and payloads), {@code TensorExchange} (the collectives' exchange of whole
 * tensors), {@code BlockExchange} and {@code Reductions}; {@code MpiJob}, the life of the job in
 * one process; and the {@code Watchdog}, which ends the job when a call waits longer than the
 * timeout, after asking every rank what it is doing ({@code RollCall}, {@code TimeoutReport}; what
 * each thread waits for: {@code OpenCall}, {@code Members}; where each rank runs: {@code JobLayout}).
 */
package io.mn4j.communicator;
