package io.mn4j.communicator;

import io.mn4j.communicator.MpiCalls.MpiAction;
import java.io.Serializable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BinaryOperator;
import java.util.function.Function;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;

/**
 * A group of ranks that exchange LibTorch tensors and Java objects, over an MPI communicator.
 *
 * <p>Rules shared by every operation (the methods do not repeat them):
 * <ul>
 *   <li>Tensors of any shape (0-d and zero-size included) and of dtype float32, float64, int32,
 *       int64, int8, uint8, bool, float16 or bfloat16. Shape and dtype travel with the data:
 *       receivers never pass them, and a receive into an existing tensor that does not match is a
 *       {@link CommunicationException} naming both sides.</li>
 *   <li>Contiguous CPU tensors are sent from and received into their own memory; other tensors are
 *       made contiguous (GPU tensors are staged through host memory). Inputs are never modified;
 *       results are new CPU tensors, whatever the inputs' device, except for the {@code ...Into}
 *       variants, which write into a tensor the caller passes, on its device. New results of 256
 *       KiB or more live in memory the communicator allocates (so that, once freed, it can serve
 *       the next result of that size): their storage cannot be {@code resize_}d larger, as
 *       LibTorch's own can; {@code clone()} one that must grow.</li>
 *   <li>Collectives must be called by every rank of the communicator in the same order. Inputs
 *       may differ in shape per rank where the operation allows it (gather, allgather, alltoall,
 *       scatter). A bad input on one rank (a tensor that cannot be sent, a wrong list length,
 *       mismatched dtypes or shapes where they must match) is reported by the collective on every
 *       rank that depends on it, so no rank is left waiting (in {@link #gather}, the root and the
 *       rank with the bad input; the other senders return).</li>
 *   <li>Every rank must pass the same root to a rooted collective (bcast, bcastInto, gather,
 *       scatter, reduce) and the same {@link ReduceOp} to a reduction. A root or op that differs
 *       between ranks, a root outside {@code [0, size())} or a null op on any rank is an exception
 *       on every rank, naming each rank's value, before any data moves.</li>
 *   <li>Messages larger than the chunk size are split and reassembled ({@link #setChunkBytes}).</li>
 * </ul>
 *
 * <p>Create the world communicator with {@link #world()} (or {@link #run}), derive others with
 * {@link #split}. Threads may communicate at once on distinct peers or tags (MPI is initialized
 * with {@code THREAD_MULTIPLE}), but the sends, and the receives, of one (peer, tag) must come from
 * one thread at a time: a tensor travels as a header and a payload, and two threads' calls could
 * interleave them. A collective is called by one thread at a time per communicator, as in MPI.
 */
public final class Communicator implements AutoCloseable {
    /** Default chunk: the largest multiple of 8 bytes below MPI's int count limit. */
    public static final long DEFAULT_CHUNK_BYTES = (Integer.MAX_VALUE / 8) * 8L;

    private static Communicator world;

    private final Intracomm comm;
    private final List<Intracomm> owned = new ArrayList<>();
    private final int rank;
    private final int size;
    private final NodeLayout nodes;
    private final int maxTag;
    private final CommStats stats;
    private final Wire p2p;
    private final Wire collectiveWire;
    private final CheckedPointToPoint pointToPoint;
    private final CheckedCollectives collectives;
    /** Its members in world ranks and its name, for the watchdog's reports. */
    private final Members members;
    private final CrossRankChecks checks;
    private final GradientReducer gradients;
    private volatile boolean closed;

    /** {@code id}: alike on every member ({@link Members#id}). */
    Communicator(Intracomm comm, boolean ownsComm, String id) throws MPIException {
        this.comm = comm;
        this.members = Members.of(comm, id);
        if (ownsComm) {
            owned.add(comm);
        }
        this.rank = comm.getRank();
        this.size = comm.getSize();
        this.maxTag = ShapeTag.tagUpperBound();
        long chunk = checkedChunkBytes(Long.getLong("mn4j.chunkBytes", DEFAULT_CHUNK_BYTES), "-Dmn4j.chunkBytes");
        // Private duplicates: mn4j's own traffic never matches a user's message (the world
        // communicator is MPI_COMM_WORLD itself, which a program may use directly too).
        this.p2p = new Wire(dup(comm), dup(comm), chunk, members);
        this.pointToPoint = new CheckedPointToPoint(p2p, rank, size, maxTag);
        Intracomm checkRounds = dup(comm);
        this.collectiveWire = new Wire(checkRounds, dup(comm), chunk, members);
        this.checks = new CrossRankChecks(checkRounds);
        this.nodes = NodeLayout.of(comm);
        this.collectives = new CheckedCollectives(comm, checks, collectiveWire,
                new BlockExchange(dup(comm), nodes.interSize() > 1));
        this.stats = new CommStats(rank);
        this.gradients = new GradientReducer(this);
    }

    private Intracomm dup(Intracomm c) throws MPIException {
        Intracomm d = c.dup();
        owned.add(d);
        return d;
    }

    // ------------------------------------------------------------------------------------------
    // Creation and shape of the group

    /**
     * The communicator of all ranks of the job. Initializes MPI (THREAD_MULTIPLE) on first call,
     * installs a handler that ends the whole job when any thread throws, and sets LibTorch's
     * intra-op threads to the cores of this node divided by the ranks on it.
     */
    public static synchronized Communicator world() {
        if (world == null) {
            MpiJob.start();
            try {
                world = new Communicator(MPI.COMM_WORLD, false, Members.WORLD);
                TransferProgress.configure(world.interSize());
            } catch (MPIException e) {
                throw new CommunicationException("MPI initialization failed: " + e.getMessage(), e);
            }
        }
        return world;
    }

    /**
     * Runs {@code body} on the world communicator, then finalizes MPI. An exception escaping it
     * on any rank ends the whole job (every rank exits non-zero) with that rank's message printed,
     * except a {@link JobInputException} that every rank of the job throws (from {@link Agreement}):
     * then MPI is finalized and every rank throws it on, for the program to report.
     * Communicator calls still running on other threads when the body returns are waited for (30 s,
     * {@code -Dmn4j.endWaitSeconds}); one that does not end by then ends the job, all ranks, naming
     * the cause.
     */
    public static void run(JobBody body) {
        MpiJob.run(() -> body.run(world()));
    }

    /**
     * Finalizes MPI; also done at JVM exit. Call after the last communication; calls still running
     * on other threads are waited for, as at the end of {@link #run}.
     */
    public static void shutdown() {
        MpiJob.finishWhenCallsEnd("Communicator.shutdown() was called");
    }

    /**
     * Sets how long any communicator call of this process may wait (a receive for its message, a
     * collective for the other ranks, {@code waitFor} for its transfer) before the job ends, every
     * rank, with a report naming the operation, its tag and the ranks that have not answered or
     * arrived. Only time inside a call counts, not the program's own work between calls. The
     * default is 30 minutes, or {@code -Dmn4j.timeout} / {@code MN4J_TIMEOUT} (seconds, or a
     * number with {@code s}, {@code m} or {@code h}); {@link Duration#ZERO} turns it off. Takes
     * effect for calls in progress too; each rank has its own.
     *
     * @throws IllegalArgumentException if {@code timeout} is negative
     */
    public static void setTimeout(Duration timeout) {
        Watchdog.setTimeout(timeout);
    }

    /** The timeout of {@link #setTimeout}; {@link Duration#ZERO} when there is none. */
    public static Duration timeout() {
        return Watchdog.timeout();
    }

    /** The body of a job for {@link #run}. */
    @FunctionalInterface
    public interface JobBody {
        void run(Communicator world) throws Exception;
    }

    public int rank() {
        return rank;
    }

    public int size() {
        return size;
    }

    /** Rank among the ranks of this communicator on the same node. */
    public int intraRank() {
        return nodes.intraRank();
    }

    /** Number of ranks of this communicator on this node. */
    public int intraSize() {
        return nodes.intraSize();
    }

    /** Index of this rank's node, nodes numbered in the order of their lowest rank. */
    public int interRank() {
        return nodes.interRank();
    }

    /** Number of nodes this communicator spans. */
    public int interSize() {
        return nodes.interSize();
    }

    /** Per-operation counters of this communicator. */
    public CommStats stats() {
        return stats;
    }

    /**
     * Sets this rank's chunk size for large messages: a multiple of 8 bytes, at most
     * {@link #DEFAULT_CHUNK_BYTES}, which is the default unless {@code -Dmn4j.chunkBytes} sets one.
     *
     * <p>Ranks may set different sizes; none makes a receive shorter than its message
     * (MPI_ERR_TRUNCATE, after which Open MPI 4.1's single-copy transfer may write past the receive
     * buffer) or leaves a rank waiting:
     * <ul>
     *   <li>send, recv, recvInto, isend, irecv, bcast, gather, allgather, alltoall, scatter and the
     *       object operations carry the sender's (or bcast root's) chunk size in a header, and the
     *       receivers split as it did: any sizes work.</li>
     *   <li>bcastInto, allreduce, allreduceInto and reduce move their chunks in step on every rank:
     *       unless every rank has the same chunk size, every rank throws a
     *       {@link CommunicationException} naming every rank's size, before any data moves.</li>
     *   <li>allgatherInto and alltoallInto: blocks no larger than every rank's chunk size work; a
     *       larger block makes every rank throw, naming every rank's chunk size.</li>
     * </ul>
     */
    public void setChunkBytes(long bytes) {
        checkedChunkBytes(bytes, "setChunkBytes");
        p2p.setChunkBytes(bytes);
        collectiveWire.setChunkBytes(bytes);
    }

    private static long checkedChunkBytes(long bytes, String from) {
        if (bytes < 8 || bytes % 8 != 0 || bytes > DEFAULT_CHUNK_BYTES) {
            throw new IllegalArgumentException(from + ": the chunk size must be a multiple of 8 in [8, "
                    + DEFAULT_CHUNK_BYTES + "], got " + bytes);
        }
        return bytes;
    }

    public long chunkBytes() {
        return p2p.chunkBytes();
    }

    /**
     * The largest tag point-to-point calls accept: MPI_TAG_UB of this MPI library and network, at
     * least 32767 by the standard (2^31-1 over Open MPI's shared memory, 2^23-1 over UCX).
     */
    public int maxTag() {
        return maxTag;
    }

    /**
     * A new communicator of the ranks that pass the same {@code color}, ordered by {@code key}
     * (then by rank). Collective: every rank calls it, with a color of at least 0. Close it when
     * done.
     *
     * <p>A rank that passes a negative color ({@code MPI.UNDEFINED} included) still takes part in
     * the split, so that the other ranks get their communicators, then throws an
     * {@link IllegalArgumentException} naming its color: it belongs to no new communicator.
     */
    public Communicator split(int color, int key) {
        return inMpi("split", () -> {
            // MPI takes no negative color but MPI_UNDEFINED, and a rank that threw before the split
            // would leave the others inside it: this rank splits off into no communicator.
            Intracomm sub = comm.split(color < 0 ? MPI.UNDEFINED : color, key);
            if (color < 0) {
                throw new IllegalArgumentException("split on rank " + rank + ": color " + color
                        + (color == MPI.UNDEFINED ? " (MPI.UNDEFINED)" : "") + " is negative; every rank must"
                        + " pass a color >= 0 (this rank took part in the split but is in no new communicator)");
            }
            return new Communicator(sub, true, members.childId(color));
        });
    }

    /** Blocks until every rank has called it. */
    public void barrier() {
        long t0 = System.nanoTime();
        inMpi("barrier", () -> {
            comm.barrier();
            return null;
        });
        stats.record("barrier", 0, 0, t0);
    }

    // ------------------------------------------------------------------------------------------
    // Point to point

    /** Sends a tensor to {@code dst}; blocks until its buffer may be reused. */
    public void send(Tensor x, int dst, int tag) {
        pointToPoint.checkPeer("send", dst, tag, false);
        long t0 = System.nanoTime();
        long bytes = inMpi("send", dst, tag, () -> pointToPoint.send(x, dst, tag));
        stats.record("send", bytes, 0, t0);
    }

    /** {@link #send(Tensor, int, int)} with tag 0. */
    public void send(Tensor x, int dst) {
        send(x, dst, 0);
    }

    /** Receives a tensor of whatever shape and dtype {@code src} sent. */
    public Tensor recv(int src, int tag) {
        return recvInto(null, src, tag);
    }

    /** {@link #recv(int, int)} with tag 0. */
    public Tensor recv(int src) {
        return recv(src, 0);
    }

    /**
     * Receives into an existing tensor, which must have the dtype and shape that was sent;
     * otherwise the message is consumed and a {@link CommunicationException} names both.
     */
    public Tensor recvInto(Tensor into, int src, int tag) {
        pointToPoint.checkPeer("recv", src, tag, false);
        long t0 = System.nanoTime();
        Tensor out = inMpi("recv", src, tag, () -> pointToPoint.recv(src, tag, into));
        stats.record("recv", 0, out.nbytes(), t0);
        return out;
    }

    /**
     * Starts sending a tensor; the returned handle keeps its memory alive until the send
     * completes, even if the tensor's own scope closes first.
     */
    public SendHandle isend(Tensor x, int dst, int tag) {
        pointToPoint.checkPeer("isend", dst, tag, true);
        long t0 = System.nanoTime();
        SendHandle handle = inMpi("isend", dst, tag, () -> pointToPoint.isend(x, dst, tag));
        handle.countWaitsIn(stats);
        stats.record("isend", handle.bytes(), 0, t0);
        return handle;
    }

    /**
     * Starts receiving a tensor from {@code src}. Its bytes are added to the {@code irecv}
     * counters when the receive completes.
     */
    public RecvHandle irecv(int src, int tag) {
        pointToPoint.checkPeer("irecv", src, tag, true);
        long t0 = System.nanoTime();
        RecvHandle h = inMpi("irecv", src, tag, () -> pointToPoint.irecv(src, tag, bytes -> stats.addReceived("irecv", bytes)));
        h.countWaitsIn(stats);
        stats.record("irecv", 0, 0, t0);
        return h;
    }

    // ------------------------------------------------------------------------------------------
    // Collectives

    /**
     * Broadcasts {@code root}'s tensor; every rank returns a tensor equal to it (the root returns
     * its input). Non-root ranks may pass null.
     */
    public Tensor bcast(Tensor x, int root) {
        long t0 = System.nanoTime();
        Tensor out = inMpi("bcast", () -> collectives.bcast(x, root));
        stats.record("bcast", rank == root ? out.nbytes() * (size - 1) : 0, rank == root ? 0 : out.nbytes(), t0);
        return out;
    }

    /**
     * Broadcasts {@code root}'s tensor into {@code into} on every rank (in place), which must have
     * the same dtype and shape on every rank, as must the root. The root's {@code into} is only
     * read.
     */
    public void bcastInto(Tensor into, int root) {
        long t0 = System.nanoTime();
        inMpi("bcast", () -> {
            collectives.bcastInto(into, root);
            return null;
        });
        stats.record("bcast", rank == root ? into.nbytes() * (size - 1) : 0, rank == root ? 0 : into.nbytes(), t0);
    }

    /**
     * Gathers every rank's tensor (shapes may differ) at {@code root}: the root returns the list
     * in rank order, other ranks return an empty list.
     */
    public List<Tensor> gather(Tensor x, int root) {
        long t0 = System.nanoTime();
        List<Tensor> out = inMpi("gather", () -> collectives.gather(x, root));
        long own = x.nbytes(); // x could be sent: its header's bytes
        stats.record("gather", rank == root ? 0 : own, rank == root ? sumBytes(out) - own : 0, t0);
        return out;
    }

    /** Every rank gets every rank's tensor (shapes may differ), in rank order. */
    public List<Tensor> allgather(Tensor x) {
        long t0 = System.nanoTime();
        List<Tensor> out = inMpi("allgather", () -> collectives.allgather(x));
        long own = out.get(rank).nbytes();
        stats.record("allgather", own * (size - 1), sumBytes(out) - own, t0);
        return out;
    }

    /**
     * Every rank's {@code x} written into {@code out} in rank order, as MPI_Allgather and
     * torch.distributed's {@code all_gather_into_tensor} do: {@code x} must have the same dtype
     * and shape on every rank, and {@code out} must hold {@code size() * x.numel()} elements of
     * that dtype (any shape, e.g. {@code [size, ...x.shape]}); rank r's elements land at
     * {@code [r * x.numel(), (r + 1) * x.numel())} of {@code out}'s contiguous order. Nothing is
     * allocated for a contiguous CPU {@code out}.
     */
    public void allgatherInto(Tensor x, Tensor out) {
        long t0 = System.nanoTime();
        long nbytes = inMpi("allgatherInto", () -> collectives.allgatherInto(x, out));
        stats.record("allgather", nbytes * (size - 1), nbytes * (size - 1), t0);
    }

    /**
     * {@code x}'s contiguous elements, cut into {@code size()} equal blocks: block j goes to rank
     * j, which writes the block from rank i as block i of its {@code out} — MPI_Alltoall, and
     * torch.distributed's {@code all_to_all_single} without split sizes. {@code x} must have the
     * same dtype and shape on every rank, with a number of elements divisible by {@code size()};
     * {@code out} must hold as many elements of that dtype. Nothing is allocated for a contiguous
     * CPU {@code out}.
     */
    public void alltoallInto(Tensor x, Tensor out) {
        long t0 = System.nanoTime();
        long blockBytes = inMpi("alltoallInto", () -> collectives.alltoallInto(x, out));
        stats.record("alltoall", blockBytes * (size - 1), blockBytes * (size - 1), t0);
    }

    /**
     * Rank i sends {@code xs.get(j)} to rank j and returns the list of tensors it received, in
     * source rank order. {@code xs} must hold one tensor per rank (shapes may differ).
     */
    public List<Tensor> alltoall(List<Tensor> xs) {
        long t0 = System.nanoTime();
        List<Tensor> out = inMpi("alltoall", () -> collectives.alltoall(xs));
        stats.record("alltoall", sumBytes(xs) - xs.get(rank).nbytes(), sumBytes(out) - out.get(rank).nbytes(), t0);
        return out;
    }

    /**
     * The root's {@code xs.get(r)} goes to rank r; every rank returns its part. Only the root's
     * {@code xs} is read (one tensor per rank, shapes may differ); others may pass null.
     */
    public Tensor scatter(List<Tensor> xs, int root) {
        long t0 = System.nanoTime();
        Tensor out = inMpi("scatter", () -> collectives.scatter(xs, root));
        stats.record("scatter", rank == root ? sumBytes(xs) - xs.get(rank).nbytes() : 0,
                rank == root ? 0 : out.nbytes(), t0);
        return out;
    }

    /**
     * Element-wise reduction over all ranks; every rank returns the result (a new tensor). Every
     * rank must pass the same dtype and shape ({@link ReduceOp#MEAN}: a floating-point dtype).
     */
    public Tensor allreduce(Tensor x, ReduceOp op) {
        long t0 = System.nanoTime();
        Tensor out = inMpi("allreduce", () -> collectives.allreduce(x, op));
        stats.record("allreduce", x.nbytes(), x.nbytes(), t0);
        return out;
    }

    /** {@link #allreduce(Tensor, ReduceOp)} with {@link ReduceOp#SUM}. */
    public Tensor allreduce(Tensor x) {
        return allreduce(x, ReduceOp.SUM);
    }

    /**
     * {@link #allreduce(Tensor, ReduceOp)} written into {@code out}, which must hold as many
     * elements as {@code x}, of its dtype (any shape); {@code out} may be {@code x} itself, for an
     * in-place reduction as torch.distributed's {@code all_reduce} (MPI_IN_PLACE). Nothing is
     * allocated for a contiguous CPU {@code out} of an MPI dtype.
     */
    public void allreduceInto(Tensor x, Tensor out, ReduceOp op) {
        long t0 = System.nanoTime();
        inMpi("allreduceInto", () -> {
            collectives.allreduceInto(x, out, op);
            return null;
        });
        stats.record("allreduce", out.nbytes(), out.nbytes(), t0);
    }

    /**
     * Element-wise reduction over all ranks, result at {@code root} (other ranks return null), as
     * in {@link #allreduce(Tensor, ReduceOp)}.
     */
    public Tensor reduce(Tensor x, ReduceOp op, int root) {
        long t0 = System.nanoTime();
        Tensor out = inMpi("reduce", () -> collectives.reduce(x, op, root));
        stats.record("reduce", rank == root ? 0 : x.nbytes(), rank == root ? x.nbytes() : 0, t0);
        return out;
    }

    private static long sumBytes(List<Tensor> ts) {
        long n = 0;
        for (Tensor t : ts) {
            n += t == null ? 0 : t.nbytes();
        }
        return n;
    }

    // ------------------------------------------------------------------------------------------
    // Java objects

    /** Sends a serializable object. */
    public void sendObj(Serializable obj, int dst, int tag) {
        ObjectCodec.withEncoded(obj, t -> {
            send(t, dst, tag);
            return null;
        });
    }

    /** Receives an object sent with {@link #sendObj}. */
    public <T> T recvObj(int src, int tag) {
        return ObjectCodec.decode(recv(src, tag), pointToPoint.describeCall("recvObj", src, tag));
    }

    /** Broadcasts the root's object (others pass null, or anything: it is ignored). */
    public <T extends Serializable> T bcastObj(T obj, int root) {
        Tensor received = rank == root ? ObjectCodec.withEncoded(obj, t -> bcast(t, root)) : bcast(null, root);
        return ObjectCodec.decode(received, "bcastObj from root " + root);
    }

    /** The root gets every rank's object in rank order; others get an empty list. */
    public <T extends Serializable> List<T> gatherObj(T obj, int root) {
        return ObjectCodec.decodeAll(ObjectCodec.withEncoded(obj, t -> gather(t, root)), "gatherObj");
    }

    /** Every rank gets every rank's object in rank order. */
    public <T extends Serializable> List<T> allgatherObj(T obj) {
        return ObjectCodec.decodeAll(ObjectCodec.withEncoded(obj, this::allgather), "allgatherObj");
    }

    /**
     * For checks that must end alike on every rank: every rank passes its own problem (null if
     * none) and gets "rank r: problem" for each rank that had one, in rank order, the same list
     * on every rank (empty if none had). Collective.
     */
    public List<String> problemsOnRanks(String problemOrNull) {
        return RankValues.problems(allgatherObj(problemOrNull));
    }

    /**
     * Every rank passes its value of something that must be one and the same everywhere (read
     * by each rank for itself, say); returns null when all are equal, else which ranks have which
     * ("rank 0 has 10; ranks 1, 2 have 9"), the same text on every rank. Collective.
     */
    public String disagreement(Serializable value) {
        return RankValues.disagreement(allgatherObj(value));
    }

    /** Folds every rank's object in rank order with {@code op}; identical on every rank. */
    public <T extends Serializable> T allreduceObj(T obj, BinaryOperator<T> op) {
        List<T> all = allgatherObj(obj);
        T acc = all.get(0);
        for (int r = 1; r < all.size(); r++) {
            acc = op.apply(acc, all.get(r));
        }
        return acc;
    }

    // ------------------------------------------------------------------------------------------
    // Models

    /** Broadcasts every parameter and buffer of {@code module} from {@code root}, in place. */
    public void bcastData(Module module, int root) {
        ModelSync.forEachParameterAndBuffer(module, t -> bcastInto(t, root));
    }

    /**
     * Replaces every parameter's gradient by its mean over the ranks (missing gradients count as
     * zeros), in parameter order, with one allreduce ({@link GradReduction#flat()}).
     */
    public void meanGrad(Module module) {
        meanGrad(module, GradReduction.flat());
    }

    /**
     * {@link #meanGrad(Module)} reduced as {@code how} says: flat or hierarchical, in the gradients'
     * dtype or in 16 bits between nodes. Every rank passes the same {@code how}; one small
     * all-reduce checks that before the gradients move.
     */
    public void meanGrad(Module module, GradReduction how) {
        ModelSync.reduceGradients(module, flat -> gradients.reduce("meanGrad", flat, true, how));
    }

    /**
     * Replaces every parameter's gradient by its sum over the ranks (missing gradients count as
     * zeros), for losses that each rank computes a share of; in parameter order, with one allreduce.
     */
    public void sumGrad(Module module) {
        sumGrad(module, GradReduction.flat());
    }

    /** {@link #sumGrad(Module)} reduced as {@code how} says (see {@link #meanGrad(Module, GradReduction)}). */
    public void sumGrad(Module module, GradReduction how) {
        ModelSync.reduceGradients(module, flat -> gradients.reduce("sumGrad", flat, false, how));
    }

    /**
     * Returns once every rank passed the same {@code values} and {@code fine}; otherwise every rank
     * throws a {@link CommunicationException} with {@code rule} and every rank's values, as
     * {@code describe} words them. One small all-reduce.
     */
    void agreeOnValues(String op, boolean fine, long[] values, Function<long[], String> describe,
            String rule) {
        inMpi(op, () -> {
            checks.agreeOnValues(op, fine, values, describe, rule);
            return null;
        });
    }

    // ------------------------------------------------------------------------------------------
    // Failure and the end

    /** Ends the whole job: every rank exits with a non-zero code. */
    public void abort(int code) {
        try {
            comm.abort(code);
        } catch (MPIException e) {
            Runtime.getRuntime().halt(code);
        }
    }

    /**
     * Frees this communicator's MPI resources (not MPI_COMM_WORLD itself). Collective: every rank
     * closes it. Any operation afterwards throws an {@link IllegalStateException}; closing again
     * does nothing. Once the job is ending ({@link #run}'s body returned, or {@link #shutdown}),
     * closing only marks it closed: finalization frees its MPI resources.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        gradients.close();
        closed = true;
        p2p.close();
        if (!MpiCalls.enterUnlessEnding()) {
            return; // the job is ending: finalization frees the MPI communicators, maybe already did
        }
        try {
            for (Intracomm c : owned) {
                c.free();
            }
        } catch (MPIException e) {
            throw new CommunicationException("freeing a communicator: " + e.getMessage(), e);
        } finally {
            MpiCalls.leave();
        }
    }

    /**
     * Runs a collective's MPI calls ({@link MpiCalls#run}). A closed communicator's MPI handles are
     * freed: using them would abort the job (MPI_ERR_COMM), so the operation throws here instead.
     */
    private <T> T inMpi(String op, MpiAction<T> action) {
        return inMpi(op, OpenCall.COLLECTIVE, OpenCall.NO_TAG, action);
    }

    /** Runs the MPI calls of a point-to-point operation with {@code peer}, as {@link #inMpi(String, MpiAction)}. */
    private <T> T inMpi(String op, int peer, int tag, MpiAction<T> action) {
        if (closed) {
            throw new IllegalStateException(op + " on rank " + rank + ": communicator closed (close() was called)");
        }
        return MpiCalls.run(op, members, peer, tag, action);
    }
}
