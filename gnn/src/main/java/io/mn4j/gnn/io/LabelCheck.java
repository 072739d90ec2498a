package io.mn4j.gnn.io;

import io.mn4j.gnn.graph.Graph;
import io.mn4j.tensor.Tensors;
import java.util.function.LongFunction;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * The check every graph reader applies to node labels before a graph leaves it (so before any
 * partition is written), and the class count it derives.
 *
 * <p>A label is a class in {@code [0, classes)} or {@link Graph#UNLABELLED}. With a declared class
 * count, a label at or above it is an error. Without one the count is the largest label + 1, and
 * it must not be far above the number of distinct labels: more than
 * {@code 2 × distinct + }{@value #SLACK} classes is an error, since every rank would allocate
 * per-class rows (weights, scores, gradients) for classes that never occur — one label of
 * 1,000,000 among seven makes a million output columns. Data whose class ids are genuinely sparse
 * either relabels them to {@code 0..distinct-1} (numpy's {@code unique(labels, return_inverse=True)})
 * or declares the class count (the readers' {@code numClasses} argument, {@code --classes} of the
 * programs). The slack lets small label sets skip a class or two (a split that lacks the last
 * classes, ids from 1) without a declaration.
 */
public final class LabelCheck {
    /** Classes allowed beyond twice the distinct labels when no class count is declared. */
    public static final int SLACK = 16;

    private LabelCheck() {
    }

    /**
     * Checks {@code labels} (int64 [n]) and returns the class count: {@code declared} if given
     * (≥ 0), else the largest label + 1 (0 when no node is labelled).
     *
     * @param source the file the labels came from, for messages
     * @param node where node {@code i} is in that file, for messages ("node 5", "line 6")
     * @throws GraphFormatException naming the file and the first node at fault: a negative label
     *     other than {@link Graph#UNLABELLED}, a label at or above the declared count, or (none
     *     declared) a class count far above the distinct labels
     */
    public static int classCount(Tensor labels, int declared, String source, LongFunction<String> node) throws GraphFormatException {
        if (labels.dim() != 1 || Tensors.type(labels) != torch.ScalarType.Long) {
            throw new IllegalArgumentException("labels must be int64 [n], got " + Tensors.describe(labels));
        }
        try (PointerScope s = new PointerScope()) {
            Tensor negative = labels.lt(new Scalar(0)).logical_and(labels.ne(new Scalar(Graph.UNLABELLED)));
            Tensor bad = negative.nonzero();
            if (bad.size(0) > 0) {
                long i = bad.get(0).item_long();
                throw new GraphFormatException(source + ": " + node.apply(i) + " has label " + labels.get(i).item_long()
                        + ": a label is a class 0, 1, ... or " + Graph.UNLABELLED + " for a node without one" + more(bad));
            }
            if (declared >= 0) {
                bad = labels.ge(new Scalar(declared)).nonzero();
                if (bad.size(0) > 0) {
                    long i = bad.get(0).item_long();
                    throw new GraphFormatException(source + ": " + node.apply(i) + " has label " + labels.get(i).item_long()
                            + ", outside the " + declared + " classes declared [0, " + declared + ")" + more(bad));
                }
                return declared;
            }
            Tensor labelled = labels.masked_select(labels.ge(new Scalar(0)));
            if (labelled.numel() == 0) {
                return 0;
            }
            long max = labelled.max().item_long();
            long distinct = torch.unique_consecutive(labelled.sort().get0()).get0().numel();
            long limit = 2 * distinct + SLACK;
            if (max + 1 > limit) {
                long i = labels.eq(new Scalar(max)).nonzero().get(0).item_long();
                throw new GraphFormatException(source + ": " + node.apply(i) + " has label " + max + ", which makes " + (max + 1)
                        + " classes for " + distinct + " distinct labels (at most 2 x " + distinct + " + " + SLACK + " = " + limit
                        + " without a declared class count): relabel the classes to 0.." + (distinct - 1)
                        + ", or declare the class count (--classes) if the ids are meant as they are");
            }
            return Math.toIntExact(max + 1);
        }
    }

    private static String more(Tensor bad) {
        long more = bad.size(0) - 1;
        return more > 0 ? " (and " + more + " more such labels)" : "";
    }
}
