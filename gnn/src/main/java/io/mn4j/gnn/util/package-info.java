/**
 * Small helpers shared by the gnn packages: copies between Java arrays and LibTorch tensors,
 * tensor handles that outlive a {@link org.bytedeco.javacpp.PointerScope}, and the canonical
 * {@code ScalarType} of a tensor (see {@link io.mn4j.gnn.util.Tensors#type}); and
 * {@link io.mn4j.gnn.util.Agreement}, which gives every rank of a job the same outcome of work that
 * may fail on some ranks only.
 */
package io.mn4j.gnn.util;
