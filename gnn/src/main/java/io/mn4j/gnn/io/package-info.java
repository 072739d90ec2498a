/**
 * File formats: numpy {@code .npy} arrays and {@code .npz} archives read straight into tensor
 * memory ({@link io.mn4j.gnn.io.Npy}, {@link io.mn4j.gnn.io.Npz}), graphs in the gnn-benchmark
 * {@code .npz} layout ({@link io.mn4j.gnn.io.NpzGraphReader}) and plain edge lists
 * ({@link io.mn4j.gnn.io.EdgeListReader}).
 */
package io.mn4j.gnn.io;
