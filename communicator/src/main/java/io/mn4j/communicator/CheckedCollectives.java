package io.mn4j.communicator;

import static io.mn4j.communicator.CrossRankChecks.NO_OP;
import static io.mn4j.communicator.CrossRankChecks.NO_ROOT;

import io.mn4j.communicator.CrossRankChecks.InStepTerms;
import io.mn4j.communicator.CrossRankChecks.LocalCheck;
import java.lang.ref.Reference;
import java.nio.LongBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;
import org.bytedeco.pytorch.Tensor;

/**
 * The collectives as a layer of argument checks around their backends, as c10d's
 * ProcessGroupWrapper runs its checks around a process group: each collective first makes sure,
 * with {@link CrossRankChecks}, that a bad argument on one rank fails it on every rank, then moves
 * its data with {@link TensorExchange}, {@link BlockExchange}, {@link Reductions} or MPI's bcast.
 */
final class CheckedCollectives {
    /** Operation codes of {@link BlockExchange}'s signatures. */
    private static final int ALLGATHER_INTO = 1;
    private static final int ALLTOALL_INTO = 2;
    private static final String SAME_ROOT_DTYPE_AND_SHAPE = "every rank must pass the same root, dtype and shape";

    private final Intracomm comm;
    private final int rank;
    private final int size;
    private final CrossRankChecks checks;
    private final Wire wire;
    private final TensorExchange tensors;
    private final BlockExchange blocks;
    private final Reductions reductions;
    /** Exchange masks of every rank and of none, made once: exchanges only read them. */
    private final boolean[] everyRank;
    private final boolean[] noRank;

    /**
     * {@code comm} carries bcast payloads and reductions, {@code wire} the exchanges and the chunk
     * size; the others are communicators of their own.
     */
    CheckedCollectives(Intracomm comm, CrossRankChecks checks, Wire wire, BlockExchange blocks) throws MPIException {
        this.comm = comm;
        this.rank = comm.getRank();
        this.size = comm.getSize();
        this.checks = checks;
        this.wire = wire;
        this.tensors = new TensorExchange(wire);
        this.blocks = blocks;
        this.reductions = new Reductions(comm);
        this.everyRank = new boolean[size];
        Arrays.fill(everyRank, true);
        this.noRank = new boolean[size];
    }

    /** The root's tensor on every rank (the root's own {@code x} there). */
    Tensor bcast(Tensor x, int root) throws MPIException {
        // The root's header reaches every rank in the round that checks the root: the others pass
        // the smallest values, so the maximum is the root's header.
        long[] header = new long[TensorHeader.LONGS];
        LongBuffer longs = LongBuffer.wrap(header);
        Tensor w = null;
        String problem = null;
        if (rank != root) {
            Arrays.fill(header, Long.MIN_VALUE);
        } else {
            try {
                // The payload goes in chunks of the root's size, which every rank then uses.
                Outgoing.headerOf(x).write(longs, 0, wire.chunkBytes());
                w = TensorBytes.wireReady(x);
            } catch (CommunicationException e) {
                // The others are about to wait for this header: they get the mark instead.
                TensorHeader.writeInvalid(longs, 0, Outgoing.UNSENDABLE);
                problem = e.getMessage();
            }
        }
        checks.agreeOnRoot("bcast", root, header);
        if (TensorHeader.isInvalid(longs, 0)) {
            throw new CommunicationException("bcast: root rank " + root + " passed "
                    + Outgoing.describe(TensorHeader.invalidCode(longs, 0)) + (problem == null ? "" : " (" + problem + ")"));
        }
        TensorHeader h = TensorHeader.read(longs, 0, "bcast from root " + root);
        long chunk = TensorHeader.chunkBytes(longs, 0, "bcast from root " + root);
        Tensor result = rank == root ? w : h.allocate();
        bcastPayload(result, h.nbytes, root, chunk);
        Reference.reachabilityFence(w);
        return rank == root ? x : result;
    }

    /** The root's tensor written into {@code into} on every rank (only read on the root). */
    void bcastInto(Tensor into, int root) throws MPIException {
        long chunk = wire.chunkBytes();
        TensorHeader mine = checks.agree("bcast", new InStepTerms(chunk, NO_OP, root), () -> SAME_ROOT_DTYPE_AND_SHAPE,
                hs -> checks.rootProblem(root), into)[0];
        Tensor w = TensorBytes.wireReady(into);
        bcastPayload(w, mine.nbytes, root, chunk);
        // Not on the root, whose data is unchanged: copying it back could only fail (into a leaf
        // that requires grad), and on the root alone.
        if (w != into && rank != root) {
            into.copy_(w);
        }
    }

    /** The payload in chunks of {@code chunk}, the same on every rank. */
    private void bcastPayload(Tensor t, long nbytes, int root, long chunk) throws MPIException {
        for (long off = 0; off < nbytes; off += chunk) {
            int len = (int) Math.min(chunk, nbytes - off);
            comm.bcast(TensorBytes.wire(t, off, len), len, MPI.BYTE, root);
        }
    }

    /** Every rank's tensor at the root, in rank order; an empty list elsewhere. */
    List<Tensor> gather(Tensor x, int root) throws MPIException {
        checks.agreeOnRoot("gather", root);
        Outgoing mine = Outgoing.sameTo(x, maskOf(root));
        TensorExchange.Exchanged got = tensors.run(mine, maskOf(root), rank == root ? everyRank : noRank, "gather");
        checks.throwIfInvalid("gather", () -> "every rank must pass a tensor that can be sent", got, mine);
        return rank == root ? Arrays.asList(got.tensors()) : List.of();
    }

    /** Every rank's tensor on every rank, in rank order. */
    List<Tensor> allgather(Tensor x) throws MPIException {
        Outgoing mine = Outgoing.sameTo(x, everyRank);
        TensorExchange.Exchanged got = tensors.run(mine, everyRank, everyRank, "allgather");
        checks.throwIfInvalid("allgather", () -> "every rank must pass a tensor that can be sent", got, mine);
        return Arrays.asList(got.tensors());
    }

    /** {@code xs.get(j)} to rank j; the tensors received, in source rank order. */
    List<Tensor> alltoall(List<Tensor> xs) throws MPIException {
        Outgoing mine = Outgoing.perRank(xs, size);
        TensorExchange.Exchanged got = tensors.run(mine, everyRank, everyRank, "alltoall");
        checks.throwIfInvalid("alltoall", () -> "every rank must pass one tensor per rank (" + size
                + "), each one that can be sent", got, mine);
        return Arrays.asList(got.tensors());
    }

    /** The root's {@code xs.get(r)} to rank r; this rank's part. */
    Tensor scatter(List<Tensor> xs, int root) throws MPIException {
        checks.agreeOnRoot("scatter", root);
        Outgoing mine = rank == root ? Outgoing.perRank(xs, size) : Outgoing.nothing(size);
        TensorExchange.Exchanged got = tensors.run(mine, rank == root ? everyRank : noRank, maskOf(root), "scatter");
        checks.throwIfInvalid("scatter", () -> "root rank " + root + " must pass one tensor per rank (" + size
                + "), each one that can be sent", got, mine);
        return got.tensors()[root];
    }

    /** Every rank's {@code x} into {@code out}, in rank order; returns the bytes of one block. */
    long allgatherInto(Tensor x, Tensor out) throws MPIException {
        return exchangeBlocks("allgatherInto", ALLGATHER_INTO,
                () -> "x must have the same dtype and shape on every rank and out must hold " + size
                        + " times x's elements, of x's dtype",
                hs -> outProblem(hs[0], hs[1], size * hs[0].numel), x, out, false);
    }

    /** Block j of {@code x} to rank j, the block from rank i into block i of {@code out}; returns a block's bytes. */
    long alltoallInto(Tensor x, Tensor out) throws MPIException {
        return exchangeBlocks("alltoallInto", ALLTOALL_INTO,
                () -> "x must have the same dtype and shape on every rank, with a number of elements divisible by "
                        + size + ", and out must hold as many elements of x's dtype",
                hs -> hs[0].numel % size != 0 ? "x has " + hs[0].numel + " elements, not divisible into " + size
                        + " blocks" : outProblem(hs[0], hs[1], hs[0].numel), x, out, true);
    }

    /**
     * allgatherInto ({@code split} false: all of x to every rank) and alltoallInto ({@code split}:
     * block j of x to rank j): checks x and out locally, then moves the blocks with
     * {@link BlockExchange}, whose tags carry the check to the other ranks; if any rank's check or
     * signature differs, every rank throws naming every rank's tensors. Returns the block's bytes.
     */
    private long exchangeBlocks(String op, int opCode, Supplier<String> rule, Function<TensorHeader[], String> check,
            Tensor x, Tensor out, boolean split) throws MPIException {
        LocalCheck mine = LocalCheck.of(check, x, out);
        boolean valid = mine.problem() == null;
        TensorHeader h = mine.headers()[0];
        long block = valid ? (split ? h.nbytes / size : h.nbytes) : 0;
        Tensor w = valid ? TensorBytes.wireReady(x) : null;
        Tensor target = valid ? TensorBytes.wireReady(out) : null;
        long from = valid ? TensorBytes.address(w) : 0;
        long into = valid ? TensorBytes.address(target) : 0;
        if (valid && TensorBytes.overlap(from, h.nbytes, into, split ? h.nbytes : size * h.nbytes)) {
            // x inside out: send a copy
            w = w.clone();
            from = TensorBytes.address(w);
        }
        int signature = valid ? blocks.signature(opCode, h) : BlockExchange.INVALID;
        long chunk = wire.chunkBytes();
        if (!blocks.exchange(signature, from, split ? block : 0, into, block, chunk)) {
            throw checks.disagreement(op, rule, mine, new InStepTerms(chunk, NO_OP, NO_ROOT));
        }
        if (target != out) { // staged: copied back into the caller's tensor
            out.copy_(target);
        }
        Reference.reachabilityFence(w);
        Reference.reachabilityFence(target);
        return block;
    }

    /** The element-wise reduction of every rank's {@code x}, as a new tensor. */
    Tensor allreduce(Tensor x, ReduceOp op) throws MPIException {
        InStepTerms terms = reductionTerms(op, NO_ROOT);
        TensorHeader h = checks.agree("allreduce", terms, reductionRule(false, false),
                hs -> reductionProblem(op, false, NO_ROOT, hs[0]), x)[0];
        return reductions.allreduce(h, x, op, null, terms.chunk());
    }

    /** {@link #allreduce} written into {@code out}, which may be {@code x}. */
    void allreduceInto(Tensor x, Tensor out, ReduceOp op) throws MPIException {
        InStepTerms terms = reductionTerms(op, NO_ROOT);
        TensorHeader h = checks.agree("allreduceInto", terms, reductionRule(false, true),
                hs -> firstProblem(reductionProblem(op, false, NO_ROOT, hs[0]), outProblem(hs[0], hs[1], hs[0].numel)),
                x, out)[0];
        reductions.allreduce(h, x, op, out, terms.chunk());
    }

    /** {@link #allreduce} as a new tensor at {@code root}; null elsewhere. */
    Tensor reduce(Tensor x, ReduceOp op, int root) throws MPIException {
        InStepTerms terms = reductionTerms(op, root);
        TensorHeader h = checks.agree("reduce", terms, reductionRule(true, false),
                hs -> reductionProblem(op, true, root, hs[0]), x)[0];
        return reductions.reduce(h, x, op, root, terms.chunk());
    }

    /** A reduction moves its chunks in step: every rank must use the same op, root and chunk size. */
    private InStepTerms reductionTerms(ReduceOp op, int root) {
        return new InStepTerms(wire.chunkBytes(), op == null ? NO_OP : op.ordinal(), root);
    }

    private static Supplier<String> reductionRule(boolean rooted, boolean hasOut) {
        return () -> "every rank must pass the same op" + (rooted ? ", root" : "")
                + ", dtype and shape (MEAN: a floating-point dtype)"
                + (hasOut ? " and out must hold as many elements of x's dtype" : "");
    }

    /** This rank's problem with a reduction's op and root, given its tensor's header, or null. */
    private String reductionProblem(ReduceOp op, boolean rooted, int root, TensorHeader x) {
        if (op == null) {
            return "a null op";
        }
        if (rooted && checks.rootProblem(root) != null) {
            return checks.rootProblem(root);
        }
        if (op == ReduceOp.MEAN && !x.type.isFloatingPoint()) {
            return "MEAN needs a floating-point tensor, got " + x;
        }
        return null;
    }

    /** Why {@code out} cannot take {@code numel} elements of {@code x}'s dtype, or null. */
    private static String outProblem(TensorHeader x, TensorHeader out, long numel) {
        if (out.type != x.type || out.numel != numel) {
            return "out is " + out + ", needs " + numel + " elements of " + x.type.label;
        }
        return null;
    }

    private static String firstProblem(String a, String b) {
        return a != null ? a : b;
    }

    /** The exchange mask of one rank. */
    private boolean[] maskOf(int r) {
        boolean[] one = new boolean[size];
        one[r] = true;
        return one;
    }
}
