/**
 * Runnable programs, started with {@code mpirun -np N java -cp ... io.mn4j.examples.<Name>}; all
 * but the tour are command-line tools with {@code --help}:
 * <ul>
 *   <li>{@link io.mn4j.examples.CommunicatorTour}: the Communicator's kinds of calls, every result
 *       checked (the README's example, as a program);</li>
 *   <li>{@link io.mn4j.examples.Train}: the main job, an MLP split across the ranks (model
 *       parallel) trained on Fashion-MNIST with a multi-node iterator;</li>
 *   <li>{@link io.mn4j.examples.TrainDataParallel}: scatterDataset and a multi-node optimizer;</li>
 *   <li>{@link io.mn4j.examples.TrainEnsemble}: an ensemble averaging the ranks' outputs with a
 *       differentiable allgather;</li>
 *   <li>{@link io.mn4j.examples.TrainDualParallel}: model parallel within pairs of ranks, data
 *       parallel across pairs, using communicator splits;</li>
 *   <li>{@link io.mn4j.examples.TrainGnn}: full-graph GNN training (GCN, GraphSAGE, GAT) on a graph
 *       partitioned over the ranks, in SAR, sequential, one-shot or pipelined (PipeGCN) aggregation;</li>
 *   <li>{@link io.mn4j.examples.Partition}: partitions a graph for {@code TrainGnn} (a single
 *       process) and prints the edge cut, balance and communication volume.</li>
 * </ul>
 * The training programs print on rank 0 one line per epoch (loss, accuracy, time, throughput,
 * resident memory) and write {@code epochs.csv} and {@code curves.png} to the output directory.
 */
package io.mn4j.examples;
