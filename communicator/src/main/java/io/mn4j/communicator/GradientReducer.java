package io.mn4j.communicator;

import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;

/**
 * Reduces a communicator's flattened gradients the way a {@link GradReduction} says: flat or
 * hierarchical, in the gradients' dtype or a 16-bit one between nodes. Every call first checks,
 * in one small all-reduce, that every rank passed the same reduction, op and gradient size, so
 * that ranks taking different routes throw instead of waiting for each other. The communicators of
 * the hierarchical route (one per node, one of the nodes' leaders) are made on its first use.
 */
final class GradientReducer implements AutoCloseable {
    private final Communicator comm;
    private Communicator node;
    private Communicator leaders;

    GradientReducer(Communicator comm) {
        this.comm = comm;
    }

    /** Replaces {@code flat} (1-d, floating point) by its sum or mean ({@code mean}) over the ranks. */
    void reduce(String op, Tensor flat, boolean mean, GradReduction how) {
        String problem = how.problem();
        long[] terms = {how.code(), mean ? 1 : 0, flat.numel(), flat.scalar_type().value};
        comm.agreeOnValues(op, problem == null, terms, v -> GradReduction.describe(v[0]) + (v[1] == 1 ? " mean" : " sum")
                + " of " + v[2] + " gradient elements of dtype " + GradReduction.dtypeName(v[3]),
                "every rank must pass the same gradient reduction, gradient size and dtype (and a reduction dtype of"
                        + " float32, float16 or bfloat16)" + (problem == null ? "" : "; on rank " + comm.rank() + ": " + problem));
        double scale = mean ? 1.0 / comm.size() : 1.0;
        if (how.route() == GradReduction.Route.FLAT) {
            across(comm, flat, mean, how);
        } else {
            hierarchical(flat, scale, how);
        }
    }

    /** One all-reduce over {@code group}: in the gradients' dtype through MPI, or in 16 bits. */
    private static void across(Communicator group, Tensor flat, boolean mean, GradReduction how) {
        if (group.size() == 1) {
            return;
        }
        if (how.lowPrecision()) {
            LowPrecisionSum.allreduceInPlace(group, flat, how.dtype(), mean ? 1.0 / group.size() : 1.0);
        } else {
            group.allreduceInto(flat, flat, mean ? ReduceOp.MEAN : ReduceOp.SUM);
        }
    }

    private void hierarchical(Tensor flat, double scale, GradReduction how) {
        makeGroups();
        Tensor nodeSum = node.size() == 1 ? flat : node.reduce(flat, ReduceOp.SUM, 0);
        if (node.rank() == 0) {
            if (leaders.size() > 1 && how.lowPrecision()) {
                LowPrecisionSum.allreduceInPlace(leaders, nodeSum, how.dtype(), scale);
            } else {
                across(leaders, nodeSum, false, how);
                if (scale != 1) {
                    nodeSum.mul_(new Scalar(scale));
                }
            }
            if (nodeSum != flat) {
                flat.copy_(nodeSum);
                nodeSum.close();
            }
        }
        if (node.size() > 1) {
            node.bcastInto(flat, 0);
        }
    }

    private void makeGroups() {
        if (node == null) {
            node = comm.split(comm.interRank(), comm.rank());
            // Ranks that lead no node form a group of their own, which they never use.
            leaders = comm.split(comm.intraRank() == 0 ? 0 : 1, comm.rank());
        }
    }

    @Override
    public void close() {
        if (node != null) {
            node.close();
            leaders.close();
        }
    }
}
