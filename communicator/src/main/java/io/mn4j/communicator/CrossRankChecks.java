package io.mn4j.communicator;

import java.nio.ByteBuffer;
import java.nio.LongBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;
import org.bytedeco.pytorch.Tensor;

/**
 * The rounds that make a bad argument (a dtype, shape, chunk size, op or root that differs between
 * ranks, or a tensor that cannot be sent) an exception on every rank rather than a rank left
 * waiting. The usual case costs one small all-reduce ({@link AgreementRound}); only once it has
 * failed does every rank gather every rank's arguments to name them in the exception.
 */
final class CrossRankChecks {
    /** The op of {@link InStepTerms} for none (or a null op, which the reductions' own check rejects). */
    static final int NO_OP = -1;
    /** The root of {@link InStepTerms} for none. */
    static final int NO_ROOT = -1;

    private final Intracomm comm;
    private final int rank;
    private final int size;

    /** {@code comm}: a communicator of mn4j's own, so that no rounds meet a user's messages. */
    CrossRankChecks(Intracomm comm) throws MPIException {
        this.comm = comm;
        this.rank = comm.getRank();
        this.size = comm.getSize();
    }

    /**
     * What every rank of an in-step collective must pass alike besides its tensors: the chunk size
     * it splits by, the op's ordinal ({@link #NO_OP} for none) and the root ({@link #NO_ROOT} for none).
     */
    record InStepTerms(long chunk, int op, int root) {
        long[] values() {
            return new long[] {chunk, op, root};
        }
    }

    /**
     * A rank's tensors as a collective checks them: their headers (null for a tensor that cannot
     * travel) and this rank's problem with them, or null.
     */
    record LocalCheck(TensorHeader[] headers, String problem) {
        /** {@code check} gets the headers once every tensor has one. */
        static LocalCheck of(Function<TensorHeader[], String> check, Tensor... tensors) {
            TensorHeader[] headers = new TensorHeader[tensors.length];
            String problem = null;
            for (int i = 0; i < tensors.length; i++) {
                try {
                    headers[i] = Outgoing.headerOf(tensors[i]);
                } catch (CommunicationException e) {
                    problem = problem == null ? e.getMessage() : problem;
                }
            }
            return new LocalCheck(headers, problem == null ? check.apply(headers) : problem);
        }
    }

    /**
     * The headers of {@code tensors}, once every rank has found the first one and the
     * {@code terms} the same as its own, and {@code check} no problem on any rank; otherwise every
     * rank throws ({@link #disagreement}) naming {@code rule}. One small all-reduce.
     */
    TensorHeader[] agree(String op, InStepTerms terms, Supplier<String> rule, Function<TensorHeader[], String> check,
            Tensor... tensors) throws MPIException {
        LocalCheck mine = LocalCheck.of(check, tensors);
        TensorHeader first = mine.headers()[0];
        long fingerprint = first == null ? 0 : first.fingerprint();
        long nbytes = first == null ? -1 : first.nbytes;
        if (AgreementRound.sameOnEveryRank(comm, mine.problem() == null, fingerprint, nbytes, terms.chunk(),
                terms.op(), terms.root())) {
            return mine.headers();
        }
        throw disagreement(op, rule, mine, terms);
    }

    /**
     * For rooted collectives without a round of their own (gather, scatter): returns once every
     * rank has passed the same root, in range; otherwise every rank throws, before any data moves.
     */
    void agreeOnRoot(String op, int root) throws MPIException {
        if (!AgreementRound.sameOnEveryRank(comm, rootProblem(root) == null, root)) {
            throw rootDisagreement(op, root);
        }
    }

    /**
     * {@link #agreeOnRoot} whose round also carries {@code carried} (each slot becomes its maximum
     * over the ranks): where only the root passes values above {@link Long#MIN_VALUE}, a broadcast.
     */
    void agreeOnRoot(String op, int root, long[] carried) throws MPIException {
        if (!AgreementRound.sameOnEveryRank(comm, rootProblem(root) == null, carried, root)) {
            throw rootDisagreement(op, root);
        }
    }

    /**
     * Returns once every rank passed the same {@code values} and {@code fine}; otherwise every rank
     * gathers every rank's values and throws, naming {@code rule} and each rank's values as
     * {@code describe} words them.
     */
    void agreeOnValues(String op, boolean fine, long[] values, Function<long[], String> describe, String rule)
            throws MPIException {
        if (AgreementRound.sameOnEveryRank(comm, fine, values)) {
            return;
        }
        int width = values.length;
        long[] every = new long[size * width];
        comm.allGather(values, width, MPI.LONG, every, width, MPI.LONG);
        List<String> ranks = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            ranks.add("rank " + r + ": " + describe.apply(Arrays.copyOfRange(every, r * width, (r + 1) * width)));
        }
        throw new CommunicationException(op + ": " + rule + "; got " + String.join(", ", ranks));
    }

    /** What is wrong with {@code root} on this rank, or null. */
    String rootProblem(int root) {
        return root < 0 || root >= size ? "root rank " + root + " is outside [0, " + size + ")" : null;
    }

    /**
     * After an exchange, throws on every rank that heard of an invalid input (its own or a
     * peer's), naming the ranks, what they passed, and this rank's own problem.
     */
    void throwIfInvalid(String op, Supplier<String> rule, TensorExchange.Exchanged got, Outgoing mine) {
        if (got.invalid().isEmpty()) {
            return;
        }
        List<String> bad = new ArrayList<>();
        got.invalid().forEach((r, code) -> bad.add("rank " + r + " passed " + Outgoing.describe(code)));
        throw new CommunicationException(op + ": " + rule.get() + ", but " + String.join(", ", bad)
                + ownProblem(mine.problem()));
    }

    /**
     * Once every rank knows that some rank's tensors broke a collective's rule, or that the ranks'
     * terms differ: gathers every rank's headers and terms and returns the exception to throw,
     * naming {@code rule} (built only now) or each term that differs with every rank's value,
     * every rank's tensors and this rank's own problem. Every rank must call it.
     */
    CommunicationException disagreement(String op, Supplier<String> rule, LocalCheck mine, InStepTerms terms)
            throws MPIException {
        List<String> tensors = everyRanksTensors(op, mine.headers());
        long[] mineTerms = terms.values();
        int width = mineTerms.length;
        long[] everyTerms = new long[size * width];
        comm.allGather(mineTerms, width, MPI.LONG, everyTerms, width, MPI.LONG);
        List<String> differ = new ArrayList<>();
        if (RankValues.differs(everyTerms, width, 0)) {
            differ.add("the chunk size (setChunkBytes or -Dmn4j.chunkBytes) must be the same on every rank, got "
                    + RankValues.list(everyTerms, width, 0, String::valueOf));
        }
        if (RankValues.differs(everyTerms, width, 1)) {
            differ.add("the op must be the same on every rank, got " + RankValues.list(everyTerms, width, 1, CrossRankChecks::opName));
        }
        if (RankValues.differs(everyTerms, width, 2)) {
            differ.add("the root must be the same on every rank, got " + RankValues.list(everyTerms, width, 2, String::valueOf));
        }
        String what = differ.isEmpty() ? rule.get() + ", got " : String.join("; ", differ) + "; the tensors: ";
        return new CommunicationException(op + ": " + what + String.join(", ", tensors) + ownProblem(mine.problem()));
    }

    /** "rank r: dtype[shape] into dtype[shape]" for every rank, from every rank's headers (all-gathered). */
    private List<String> everyRanksTensors(String op, TensorHeader[] headers) throws MPIException {
        int k = headers.length;
        ByteBuffer buf = HeaderBuffers.sendBuffer(k);
        for (int i = 0; i < k; i++) {
            if (headers[i] == null) {
                TensorHeader.writeInvalid(buf.asLongBuffer(), i * TensorHeader.LONGS, Outgoing.UNSENDABLE);
            } else {
                headers[i].write(buf.asLongBuffer(), i * TensorHeader.LONGS);
            }
        }
        ByteBuffer all = HeaderBuffers.receiveBuffer(size * k);
        comm.allGather(buf, k * TensorHeader.BYTES, MPI.BYTE, all, k * TensorHeader.BYTES, MPI.BYTE);
        LongBuffer longs = all.asLongBuffer();
        List<String> ranks = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            List<String> described = new ArrayList<>();
            for (int i = 0; i < k; i++) {
                int at = (r * k + i) * TensorHeader.LONGS;
                described.add(TensorHeader.isInvalid(longs, at) ? "(none)" : TensorHeader.read(longs, at, op).toString());
            }
            ranks.add("rank " + r + ": " + String.join(" into ", described));
        }
        return ranks;
    }

    /**
     * Once every rank knows that the ranks passed different roots, or one outside the ranks: the
     * exception to throw, naming every rank's root and this rank's own problem with it. Every rank
     * must call it.
     */
    private CommunicationException rootDisagreement(String op, int root) throws MPIException {
        long[] roots = new long[size];
        comm.allGather(new long[] {root}, 1, MPI.LONG, roots, 1, MPI.LONG);
        String mine = rootProblem(root);
        if (!RankValues.differs(roots, 1, 0)) { // the same root everywhere, and outside the ranks
            return new CommunicationException(op + " on rank " + rank + ": " + mine);
        }
        return new CommunicationException(op + ": the root must be the same on every rank, got "
                + RankValues.list(roots, 1, 0, String::valueOf) + ownProblem(mine));
    }

    private String ownProblem(String problem) {
        return problem == null ? "" : " (on rank " + rank + ": " + problem + ")";
    }

    private static String opName(long ordinal) {
        return ordinal < 0 || ordinal >= ReduceOp.values().length ? "null" : ReduceOp.values()[(int) ordinal].name();
    }
}
