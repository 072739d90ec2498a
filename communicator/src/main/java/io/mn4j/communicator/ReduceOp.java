package io.mn4j.communicator;

/** Element-wise reductions of {@link Communicator#allreduce} and {@link Communicator#reduce}. */
public enum ReduceOp {
    /** Sum over ranks. On bool tensors: logical or. */
    SUM,
    /** Sum over ranks divided by the number of ranks; floating-point dtypes only. */
    MEAN,
    /** Maximum over ranks. On bool tensors: logical or. */
    MAX,
    /** Minimum over ranks. On bool tensors: logical and. */
    MIN,
    /** Product over ranks. On bool tensors: logical and. */
    PROD
}
