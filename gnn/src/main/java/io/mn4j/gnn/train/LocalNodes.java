package io.mn4j.gnn.train;

import org.bytedeco.pytorch.Tensor;

/**
 * Features, labels and split masks of one rank's nodes (rows in the rank's local order).
 *
 * @param features float [n, f]
 * @param labels   int64 [n]
 * @param train    bool [n]
 * @param val      bool [n]
 * @param test     bool [n]
 */
public record LocalNodes(Tensor features, Tensor labels, Tensor train, Tensor val, Tensor test) {
}
