package io.mn4j.communicator;

import java.io.Serializable;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.LongBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BinaryOperator;
import java.util.function.Function;
import java.util.function.LongFunction;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * A group of ranks that exchange LibTorch tensors and Java objects, over an MPI communicator.
 *
 * <p>Contracts shared by every operation:
 * <ul>
 *   <li>Tensors of any shape (0-d and zero-size included) and of dtype float32, float64, int32,
 *       int64, int8, uint8, bool, float16 or bfloat16. Shape and dtype travel with the data:
 *       receivers never pass them, and a receive into an existing tensor that does not match is a
 *       {@link CommunicationException} naming both sides.</li>
 *   <li>Contiguous CPU tensors are sent from and received into their own memory; other tensors are
 *       made contiguous (GPU tensors are staged through host memory). Inputs are never modified;
 *       results are new CPU tensors, whatever the inputs' device, except for the {@code ...Into}
 *       variants, which write into a tensor the caller passes, on its device ({@link #allreduceInto} may be passed its input as the output,
 *       to reduce in place). New results of 256 KiB or more live in memory the communicator
 *       allocates (so that, once freed, it can serve the next result of that size): their storage
 *       cannot be {@code resize_}d larger, as LibTorch's own can; {@code clone()} one that must
 *       grow.</li>
 *   <li>Collectives must be called by every rank of the communicator in the same order. Inputs
 *       may differ in shape per rank where the operation allows it (gather, allgather, alltoall,
 *       scatter). A bad input on one rank (wrong list length, mismatched shapes in a reduction) is
 *       reported by the collective on every rank that depends on it, so no rank is left waiting
 *       (in {@link #gather}, the root and the rank with the bad input; the other senders return).</li>
 *   <li>Every rank must pass the same root to a rooted collective (bcast, bcastInto, gather,
 *       scatter, reduce) and the same {@link ReduceOp} to a reduction. A root or op that differs
 *       between ranks, a root outside {@code [0, size())} or a null op on any rank is an exception
 *       on every rank, naming each rank's value, not a rank left waiting. The reductions and
 *       bcastInto check them in the round that checks their tensors; bcast in the round that
 *       carries its header; gather and scatter, which have no such round, in one small
 *       all-reduce before their data.</li>
 *   <li>Messages larger than the chunk size (default just under 2 GiB, MPI's {@code int} count
 *       limit) are split and reassembled; see {@link #setChunkBytes} for chunk sizes that differ
 *       between ranks.</li>
 * </ul>
 *
 * <p>Create the world communicator with {@link #world()} (or {@link #run}), derive others with
 * {@link #split}. Threads may communicate at once on distinct peers or tags (MPI is initialized
 * with {@code THREAD_MULTIPLE}), but the sends, and the receives, of one (peer, tag) must come from
 * one thread at a time: a tensor travels as a header and a payload, and two threads' calls could
 * interleave them, so that a header meets another message's payload. A collective is called by one
 * thread at a time per communicator, as in MPI.
 */
public final class Communicator implements AutoCloseable {
    /** Default chunk: the largest multiple of 8 bytes below MPI's int count limit. */
    public static final long DEFAULT_CHUNK_BYTES = (Integer.MAX_VALUE / 8) * 8L;

    private final Intracomm comm;
    private final Intracomm headerCollectives;
    private final BlockExchange blocks;
    private final Wire p2p;
    private final Wire collective;
    private final List<Intracomm> owned = new ArrayList<>();
    private final int rank;
    private final int size;
    private final int intraRank;
    private final int intraSize;
    private final int interRank;
    private final int interSize;
    private final CommStats stats;
    private final int maxTag;
    /** Exchange masks of every rank and of none, made once: exchanges only read them. */
    private final boolean[] everyone;
    private final boolean[] nobody;
    private volatile boolean closed;

    Communicator(Intracomm comm, boolean ownsComm) throws MPIException {
        this.comm = comm;
        if (ownsComm) {
            owned.add(comm);
        }
        this.rank = comm.getRank();
        this.size = comm.getSize();
        this.maxTag = ShapeTag.tagUpperBound();
        this.everyone = new boolean[size];
        Arrays.fill(everyone, true);
        this.nobody = new boolean[size];
        long chunk = checkedChunkBytes(Long.getLong("mn4j.chunkBytes", DEFAULT_CHUNK_BYTES), "-Dmn4j.chunkBytes");
        // Private duplicates: mn4j's own traffic never matches a user's message (the world
        // communicator is MPI_COMM_WORLD itself, which a program may use directly too).
        Intracomm headers = dup(comm);
        Intracomm payloads = dup(comm);
        Intracomm collHeaders = dup(comm);
        Intracomm collPayloads = dup(comm);
        this.headerCollectives = collHeaders;
        this.p2p = new Wire(headers, payloads, chunk);
        this.collective = new Wire(collHeaders, collPayloads, chunk);
        this.blocks = new BlockExchange(dup(comm));
        Intracomm node = comm.splitType(Intracomm.TYPE_SHARED, rank, MPI.INFO_NULL);
        this.intraRank = node.getRank();
        this.intraSize = node.getSize();
        Intracomm across = comm.split(intraRank, rank);
        this.interRank = across.getRank();
        this.interSize = across.getSize();
        node.free();
        across.free();
        this.stats = new CommStats(rank);
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
    public static Communicator world() {
        return MpiJob.world();
    }

    /**
     * Runs {@code body} on the world communicator, then finalizes MPI. An exception escaping it
     * on any rank ends the whole job (every rank exits non-zero) with that rank's message printed.
     * Communicator calls still running on other threads when the body returns are waited for (30 s,
     * {@code -Dmn4j.endWaitSeconds}); one that does not end by then ends the job, all ranks, naming
     * the cause.
     */
    public static void run(JobBody body) {
        MpiJob.run(body);
    }

    /**
     * Finalizes MPI; also done at JVM exit. Call after the last communication; calls still running
     * on other threads are waited for, as at the end of {@link #run}.
     */
    public static void shutdown() {
        MpiJob.finishWhenCallsEnd("Communicator.shutdown() was called");
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
        return intraRank;
    }

    /** Number of ranks of this communicator on this node. */
    public int intraSize() {
        return intraSize;
    }

    /** Index of this rank's node (among the ranks with the same {@link #intraRank()}). */
    public int interRank() {
        return interRank;
    }

    /** Number of nodes (ranks with the same {@link #intraRank()}). */
    public int interSize() {
        return interSize;
    }

    /** Per-operation counters of this communicator. */
    public CommStats stats() {
        return stats;
    }

    /**
     * Chunk size in bytes for large messages (a multiple of 8, at most {@link #DEFAULT_CHUNK_BYTES};
     * default {@code -Dmn4j.chunkBytes} or {@link #DEFAULT_CHUNK_BYTES}), for this rank.
     *
     * <p>Ranks may set different sizes: a chunk size can never make a receive shorter than its
     * message (MPI_ERR_TRUNCATE, after which Open MPI 4.1's single-copy transfer may write past the
     * receive buffer), nor leave a rank waiting.
     * <ul>
     *   <li>Where a header travels with the data — send, recv, recvInto, isend, irecv, bcast,
     *       gather, allgather, alltoall, scatter and the object operations — the header carries
     *       the sender's (or bcast root's) chunk size and the receivers split as it did: these
     *       work with any sizes.</li>
     *   <li>bcastInto, allreduce, allreduceInto and reduce move their chunks in step on every rank
     *       (one MPI collective per chunk): their agreement round, which checks dtypes and shapes,
     *       checks that every rank has the same chunk size too, and every rank throws a
     *       {@link CommunicationException} naming every rank's chunk size otherwise (before any
     *       data moves, whatever the tensor's size).</li>
     *   <li>allgatherInto and alltoallInto have no agreement round ({@code BlockExchange}): blocks
     *       no larger than every rank's chunk size go unsplit and work; a block larger than some
     *       rank's chunk size makes the first chunks differ in size, which every rank sees, and
     *       every rank throws naming every rank's chunk size.</li>
     * </ul>
     * The in-step collectives do not adopt one rank's size instead: every rank must know it before
     * its first chunk, which for allgatherInto and alltoallInto would take the extra round they
     * are built without; a size that differs is a configuration mistake worth a clear error.
     */
    public void setChunkBytes(long bytes) {
        checkedChunkBytes(bytes, "setChunkBytes");
        p2p.setChunkBytes(bytes);
        collective.setChunkBytes(bytes);
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
        return call("split", () -> {
            // MPI takes no negative color but MPI_UNDEFINED, and a rank that threw before the split
            // would leave the others inside it: this rank splits off into no communicator.
            Intracomm sub = comm.split(color < 0 ? MPI.UNDEFINED : color, key);
            if (color < 0) {
                throw new IllegalArgumentException("split on rank " + rank + ": color " + color
                        + (color == MPI.UNDEFINED ? " (MPI.UNDEFINED)" : "") + " is negative; every rank must"
                        + " pass a color >= 0 (this rank took part in the split but is in no new communicator)");
            }
            return new Communicator(sub, true);
        });
    }

    /** Blocks until every rank has called it. */
    public void barrier() {
        long t0 = System.nanoTime();
        call("barrier", () -> {
            comm.barrier();
            return null;
        });
        stats.record("barrier", 0, 0, t0);
    }

    // ------------------------------------------------------------------------------------------
    // Point to point

    /** Sends a tensor to {@code dst}; blocks until its buffer may be reused. */
    public void send(Tensor x, int dst, int tag) {
        checkPeer("send", dst, tag, false);
        long t0 = System.nanoTime();
        TensorHeader h = sendableHeader("send", x, dst, tag);
        Tensor w = TensorBytes.wireReady(x);
        long bytes = call("send", () -> p2p.send(w, h, dst, tag, ctx("send", dst, tag)));
        stats.record("send", bytes, 0, t0);
    }

    /** {@link #send(Tensor, int, int)} with tag 0. */
    public void send(Tensor x, int dst) {
        send(x, dst, 0);
    }

    /** Receives a tensor of whatever shape and dtype {@code src} sent. */
    public Tensor recv(int src, int tag) {
        checkPeer("recv", src, tag, false);
        long t0 = System.nanoTime();
        Tensor out = call("recv", () -> p2p.recv(src, tag, null, ctx("recv", src, tag)));
        stats.record("recv", 0, out.nbytes(), t0);
        return out;
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
        checkPeer("recv", src, tag, false);
        long t0 = System.nanoTime();
        Tensor out = call("recv", () -> p2p.recv(src, tag, into, ctx("recv", src, tag)));
        stats.record("recv", 0, out.nbytes(), t0);
        return out;
    }

    /**
     * Starts sending a tensor; the returned handle keeps its memory alive until the send
     * completes, even if the tensor's own scope closes first.
     */
    public SendHandle isend(Tensor x, int dst, int tag) {
        checkPeer("isend", dst, tag, true);
        long t0 = System.nanoTime();
        TensorHeader h = sendableHeader("isend", x, dst, tag);
        // MPI reads the tensor after this call returns, perhaps after the caller's scope closed.
        Tensor w = HeldTensors.make(() -> {
            Tensor ready = TensorBytes.wireReady(x);
            return ready == x ? new Tensor(x) : ready;
        });
        SendHandle handle;
        try {
            handle = call("isend", () -> p2p.isend(w, h, dst, tag, ctx("isend", dst, tag)));
        } catch (RuntimeException e) {
            HeldTensors.release(w);
            throw e;
        }
        stats.record("isend", handle.bytes(), 0, t0);
        return handle;
    }

    /**
     * Starts receiving a tensor from {@code src}. Its bytes are added to the {@code irecv}
     * counters when the receive completes.
     */
    public RecvHandle irecv(int src, int tag) {
        checkPeer("irecv", src, tag, true);
        long t0 = System.nanoTime();
        // The size is known only when the header arrives: the bytes are counted on completion.
        RecvHandle h = call("irecv", () -> p2p.irecv(src, tag, ctx("irecv", src, tag),
                bytes -> stats.addReceived("irecv", bytes)));
        stats.record("irecv", 0, 0, t0);
        return h;
    }

    // ------------------------------------------------------------------------------------------
    // Collectives

    /**
     * Broadcasts {@code root}'s tensor; every rank returns a tensor equal to it (the root returns
     * its input). Non-root ranks may pass null. Every rank must pass the same root; a root that
     * differs between ranks or lies outside {@code [0, size())} is an exception on every rank.
     */
    public Tensor bcast(Tensor x, int root) {
        long t0 = System.nanoTime();
        Tensor out = call("bcast", () -> {
            // The root's header reaches every rank in the round that checks the root: the others
            // pass the smallest values, so the maximum is the root's header.
            long[] header = new long[TensorHeader.LONGS];
            LongBuffer longs = LongBuffer.wrap(header);
            Tensor w = null;
            String problem = null;
            if (rank != root) {
                Arrays.fill(header, Long.MIN_VALUE);
            } else {
                try {
                    // The payload goes in chunks of the root's size, which every rank then uses.
                    Outgoing.headerOf(x).write(longs, 0, collective.chunkBytes());
                    w = TensorBytes.wireReady(x);
                } catch (CommunicationException e) {
                    // The others are about to wait for this header: they get the mark instead.
                    TensorHeader.writeInvalid(longs, 0, Outgoing.UNSENDABLE);
                    problem = e.getMessage();
                }
            }
            if (!AgreementRound.sameOnEveryRank(headerCollectives, rootProblem(root) == null, header, root)) {
                throw rootDisagreement("bcast", root);
            }
            if (TensorHeader.isInvalid(longs, 0)) {
                throw new CommunicationException("bcast: root rank " + root + " passed "
                        + Outgoing.describe(TensorHeader.invalidCode(longs, 0))
                        + (problem == null ? "" : " (" + problem + ")"));
            }
            TensorHeader h = TensorHeader.read(longs, 0, "bcast from root " + root);
            long chunk = TensorHeader.chunkBytes(longs, 0, "bcast from root " + root);
            Tensor result = rank == root ? w : h.allocate();
            bcastPayload(result, h.nbytes, root, chunk);
            Reference.reachabilityFence(w);
            return rank == root ? x : result;
        });
        stats.record("bcast", rank == root ? out.nbytes() * (size - 1) : 0,
                rank == root ? 0 : out.nbytes(), t0);
        return out;
    }

    /**
     * Broadcasts {@code root}'s tensor into {@code into} on every rank (in place), which must have
     * the same dtype and shape on every rank, as must the root; a mismatch, or a root outside
     * {@code [0, size())} on any rank, is reported on every rank. The root's {@code into} is only
     * read.
     */
    public void bcastInto(Tensor into, int root) {
        long t0 = System.nanoTime();
        call("bcast", () -> {
            long chunk = collective.chunkBytes();
            TensorHeader mine = agree("bcast", new Terms(chunk, NO_OP, root), () -> SAME_ROOT_EVERYWHERE,
                    hs -> rootProblem(root), into)[0];
            Tensor w = TensorBytes.wireReady(into);
            bcastPayload(w, mine.nbytes, root, chunk);
            // Not on the root, whose data is unchanged: copying it back could only fail (into a
            // leaf that requires grad), and on the root alone.
            if (w != into && rank != root) {
                into.copy_(w);
            }
            return null;
        });
        stats.record("bcast", rank == root ? into.nbytes() * (size - 1) : 0,
                rank == root ? 0 : into.nbytes(), t0);
    }

    /** The payload in chunks of {@code chunk}, the same on every rank. */
    private void bcastPayload(Tensor t, long nbytes, int root, long chunk) throws MPIException {
        for (long off = 0; off < nbytes; off += chunk) {
            int len = (int) Math.min(chunk, nbytes - off);
            comm.bcast(TensorBytes.wire(t, off, len), len, MPI.BYTE, root);
        }
    }

    /**
     * Gathers every rank's tensor (shapes may differ) at {@code root}: the root returns the list
     * in rank order, other ranks return an empty list. A tensor that cannot be sent is reported
     * by its rank and by the root. Every rank must pass the same root; a root that differs between
     * ranks or lies outside {@code [0, size())} is an exception on every rank (checked in a small
     * all-reduce before the data moves).
     */
    public List<Tensor> gather(Tensor x, int root) {
        long t0 = System.nanoTime();
        List<Tensor> out = call("gather", () -> {
            agreeOnRoot("gather", root);
            Outgoing mine = Outgoing.one(x, only(root));
            Wire.Exchanged got = collective.exchange(mine, only(root), rank == root ? everyone : nobody, "gather");
            throwIfInvalid("gather", () -> "every rank must pass a tensor that can be sent", got, mine);
            return rank == root ? Arrays.asList(got.tensors()) : List.<Tensor>of();
        });
        long own = x.nbytes(); // x could be sent: its header's bytes
        stats.record("gather", rank == root ? 0 : own, rank == root ? sumBytes(out) - own : 0, t0);
        return out;
    }

    /** Every rank gets every rank's tensor (shapes may differ), in rank order. */
    public List<Tensor> allgather(Tensor x) {
        long t0 = System.nanoTime();
        Outgoing mine = Outgoing.one(x, everyone);
        List<Tensor> out = call("allgather", () -> {
            Wire.Exchanged got = collective.exchange(mine, everyone, everyone, "allgather");
            throwIfInvalid("allgather", () -> "every rank must pass a tensor that can be sent", got, mine);
            return Arrays.asList(got.tensors());
        });
        long own = mine.headers()[rank].nbytes;
        stats.record("allgather", own * (size - 1), sumBytes(out) - own, t0);
        return out;
    }

    /**
     * Every rank's {@code x} written into {@code out} in rank order, as MPI_Allgather and
     * torch.distributed's {@code all_gather_into_tensor} do: {@code x} must have the same dtype
     * and shape on every rank, and {@code out} must hold {@code size() * x.numel()} elements of
     * that dtype (any shape, e.g. {@code [size, ...x.shape]}); rank r's elements land at
     * {@code [r * x.numel(), (r + 1) * x.numel())} of {@code out}'s contiguous order. Nothing is
     * allocated for a contiguous CPU {@code out}; a mismatch on any rank is reported on every
     * rank.
     */
    public void allgatherInto(Tensor x, Tensor out) {
        long t0 = System.nanoTime();
        long nbytes = call("allgatherInto", () -> exchangeBlocks("allgatherInto", ALLGATHER_INTO,
                () -> "x must have the same dtype and shape on every rank and out must hold " + size
                        + " times x's elements, of x's dtype",
                hs -> outProblem(hs[0], hs[1], size * hs[0].numel), x, out, false));
        stats.record("allgather", nbytes * (size - 1), nbytes * (size - 1), t0);
    }

    /**
     * {@code x}'s contiguous elements, cut into {@code size()} equal blocks: block j goes to rank
     * j, which writes the block from rank i as block i of its {@code out} — MPI_Alltoall, and
     * torch.distributed's {@code all_to_all_single} without split sizes. {@code x} must have the
     * same dtype and shape on every rank, with a number of elements divisible by {@code size()};
     * {@code out} must hold as many elements of that dtype. Nothing is allocated for a contiguous
     * CPU {@code out}; a mismatch on any rank is reported on every rank.
     */
    public void alltoallInto(Tensor x, Tensor out) {
        long t0 = System.nanoTime();
        long blockBytes = call("alltoallInto", () -> exchangeBlocks("alltoallInto", ALLTOALL_INTO,
                () -> "x must have the same dtype and shape on every rank, with a number of elements divisible by "
                        + size + ", and out must hold as many elements of x's dtype",
                hs -> hs[0].numel % size != 0 ? "x has " + hs[0].numel + " elements, not divisible into " + size
                        + " blocks" : outProblem(hs[0], hs[1], hs[0].numel), x, out, true));
        stats.record("alltoall", blockBytes * (size - 1), blockBytes * (size - 1), t0);
    }

    /** Operation codes of {@link BlockExchange}'s signatures. */
    private static final int ALLGATHER_INTO = 1;
    private static final int ALLTOALL_INTO = 2;

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
        long chunk = collective.chunkBytes();
        if (!blocks.exchange(signature, from, split ? block : 0, into, block, chunk)) {
            throw disagreement(op, rule, mine, new Terms(chunk, NO_OP, NO_ROOT));
        }
        finishInto(target, out);
        Reference.reachabilityFence(w);
        Reference.reachabilityFence(target);
        return block;
    }

    /** Why {@code out} cannot take {@code numel} elements of {@code x}'s dtype, or null. */
    private static String outProblem(TensorHeader x, TensorHeader o, long numel) {
        if (o.type != x.type || o.numel != numel) {
            return "out is " + o + ", needs " + numel + " elements of " + x.type.label;
        }
        return null;
    }

    /** Copies a staged result back into the caller's tensor when it could not be used directly. */
    private static void finishInto(Tensor target, Tensor out) {
        if (target != out) {
            out.copy_(target);
        }
    }

    /**
     * Rank i sends {@code xs.get(j)} to rank j and returns the list of tensors it received, in
     * source rank order. {@code xs} must hold one tensor per rank (shapes may differ).
     */
    public List<Tensor> alltoall(List<Tensor> xs) {
        long t0 = System.nanoTime();
        Outgoing mine = Outgoing.perRank(xs, size);
        List<Tensor> out = call("alltoall", () -> {
            Wire.Exchanged got = collective.exchange(mine, everyone, everyone, "alltoall");
            throwIfInvalid("alltoall", () -> "every rank must pass one tensor per rank (" + size + "), each one that can be sent",
                    got, mine);
            return Arrays.asList(got.tensors());
        });
        stats.record("alltoall", mine.bytesToPeers(rank), sumBytes(out) - out.get(rank).nbytes(), t0);
        return out;
    }

    /**
     * The root's {@code xs.get(r)} goes to rank r; every rank returns its part. Only the root's
     * {@code xs} is read (one tensor per rank, shapes may differ); others may pass null. Every
     * rank must pass the same root; a root that differs between ranks or lies outside
     * {@code [0, size())} is an exception on every rank (checked in a small all-reduce before the
     * data moves).
     */
    public Tensor scatter(List<Tensor> xs, int root) {
        long t0 = System.nanoTime();
        Outgoing mine = rank == root ? Outgoing.perRank(xs, size) : Outgoing.nothing(size);
        Tensor out = call("scatter", () -> {
            agreeOnRoot("scatter", root);
            Wire.Exchanged got = collective.exchange(mine, rank == root ? everyone : nobody, only(root), "scatter");
            throwIfInvalid("scatter", () -> "root rank " + root + " must pass one tensor per rank (" + size
                    + "), each one that can be sent", got, mine);
            return got.tensors()[root];
        });
        stats.record("scatter", rank == root ? mine.bytesToPeers(rank) : 0, rank == root ? 0 : out.nbytes(), t0);
        return out;
    }

    /**
     * Element-wise reduction over all ranks; every rank returns the result (a new tensor). Every
     * rank must pass the same op, dtype and shape ({@link ReduceOp#MEAN}: a floating-point
     * dtype); a mismatch, a null op or MEAN of an integer tensor on any rank is an exception on
     * every rank, naming each rank's op and tensor.
     */
    public Tensor allreduce(Tensor x, ReduceOp op) {
        long t0 = System.nanoTime();
        Tensor out = call("allreduce", () -> reduceImpl("allreduce", x, op, false, NO_ROOT, false, null));
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
     * allocated for a contiguous CPU {@code out} of an MPI dtype; a mismatch on any rank (of the
     * op too, as in {@link #allreduce(Tensor, ReduceOp)}) is reported on every rank.
     */
    public void allreduceInto(Tensor x, Tensor out, ReduceOp op) {
        long t0 = System.nanoTime();
        call("allreduceInto", () -> reduceImpl("allreduceInto", x, op, false, NO_ROOT, true, out));
        stats.record("allreduce", out.nbytes(), out.nbytes(), t0);
    }

    /**
     * Element-wise reduction over all ranks, result at {@code root} (other ranks return null).
     * Every rank must pass the same op, root, dtype and shape; a mismatch, a root outside
     * {@code [0, size())}, a null op or MEAN of an integer tensor on any rank is an exception on
     * every rank, as in {@link #allreduce(Tensor, ReduceOp)}.
     */
    public Tensor reduce(Tensor x, ReduceOp op, int root) {
        long t0 = System.nanoTime();
        Tensor out = call("reduce", () -> reduceImpl("reduce", x, op, true, root, false, null));
        stats.record("reduce", rank == root ? 0 : x.nbytes(), rank == root ? x.nbytes() : 0, t0);
        return out;
    }

    /**
     * The reductions: to every rank, or ({@code rooted}) to {@code root}. With {@code hasInto}
     * (allreduce only) the result is written into {@code into}, which is returned; without, the
     * result is a new tensor.
     */
    private Tensor reduceImpl(String name, Tensor x, ReduceOp op, boolean rooted, int root, boolean hasInto,
            Tensor into) throws MPIException {
        // Agree first: a rank that rejected its input alone would leave the others in the reduction.
        // The chunks are MPI reductions that every rank must call alike: with the same op, root
        // and chunk size too, which travel in the same round.
        Terms terms = new Terms(collective.chunkBytes(), op == null ? NO_OP : op.ordinal(), root);
        Supplier<String> rule = () -> "every rank must pass the same op" + (rooted ? ", root" : "")
                + ", dtype and shape (MEAN: a floating-point dtype)"
                + (hasInto ? " and out must hold as many elements of x's dtype" : "");
        TensorHeader h = !hasInto ? agree(name, terms, rule, hs -> reductionProblem(op, rooted, root, hs[0]), x)[0]
                : agree(name, terms, rule, hs -> firstProblem(reductionProblem(op, rooted, root, hs[0]),
                        outProblem(hs[0], hs[1], hs[0].numel)), x, into)[0];
        long chunkBytes = terms.chunk();
        WireType staged = h.type.reduceAs == null ? h.type : WireType.of(h.type.reduceAs);
        boolean receives = !rooted || rank == root;
        // Where MPI writes the result, and whether it reduces that tensor in place (one buffer,
        // MPI_IN_PLACE) or from x's own memory into it (two buffers). A contiguous CPU tensor of
        // an MPI dtype is used as it is; anything else is staged in a contiguous copy.
        Tensor work;
        boolean inPlace;
        if (h.type.reduceAs != null) {
            work = x.cpu().to(h.type.reduceAs).contiguous();
            inPlace = true;
        } else if (hasInto && TensorBytes.isWireReady(into)) {
            work = into;
            boolean shared = TensorBytes.overlap(x, into);
            if (shared && TensorBytes.isWireReady(x) && x.data_ptr().address() == into.data_ptr().address()) {
                inPlace = true; // out is x
            } else if (shared || !TensorBytes.isWireReady(x)) {
                into.view(x.sizes()).copy_(shared ? x.clone() : x); // x staged in out, reduced there
                inPlace = true;
            } else {
                inPlace = false;
            }
        } else if (TensorBytes.isWireReady(x)) {
            work = receives ? h.allocate() : null;
            inPlace = false;
        } else {
            work = x.contiguous().cpu().clone();
            inPlace = true;
        }
        mpi.Op mpiOp = switch (op) {
            case SUM, MEAN -> MPI.SUM;
            case MAX -> MPI.MAX;
            case MIN -> MPI.MIN;
            case PROD -> MPI.PROD;
        };
        if (h.type == WireType.BOOL && op == ReduceOp.SUM) {
            mpiOp = MPI.MAX; // logical or
        }
        long nbytes = h.numel * staged.elementSize;
        long chunk = (chunkBytes / staged.elementSize) * staged.elementSize;
        for (long off = 0; off < nbytes; off += chunk) {
            int len = (int) Math.min(chunk, nbytes - off);
            int count = len / staged.elementSize;
            ByteBuffer in = TensorBytes.wire(inPlace ? work : x, off, len);
            ByteBuffer out = receives ? TensorBytes.wire(work, off, len) : TensorBytes.EMPTY;
            if (!rooted) {
                if (inPlace) {
                    comm.allReduce(out, count, staged.mpiType(), mpiOp);
                } else {
                    comm.allReduce(in, out, count, staged.mpiType(), mpiOp);
                }
            } else if (rank == root && inPlace) {
                comm.reduce(out, count, staged.mpiType(), mpiOp, root);
            } else {
                comm.reduce(in, out, count, staged.mpiType(), mpiOp, root);
            }
        }
        Reference.reachabilityFence(x);
        if (!receives) {
            return null;
        }
        if (op == ReduceOp.MEAN) {
            work.div_(new Scalar((double) size));
        }
        Tensor result = h.type == WireType.BOOL ? work.ne(new Scalar(0L))
                : h.type.reduceAs == null ? work : work.to(h.type.scalarType);
        if (!hasInto || result == into) {
            return result;
        }
        into.copy_(result.view(into.sizes()));
        return into;
    }

    // ------------------------------------------------------------------------------------------
    // Java objects

    /** Sends a serializable object. */
    public void sendObj(Serializable obj, int dst, int tag) {
        withEncoded(obj, t -> {
            send(t, dst, tag);
            return null;
        });
    }

    /** Receives an object sent with {@link #sendObj}. */
    public <T> T recvObj(int src, int tag) {
        return ObjectCodec.decode(recv(src, tag), ctx("recvObj", src, tag));
    }

    /** Broadcasts the root's object (others pass null, or anything: it is ignored). */
    public <T extends Serializable> T bcastObj(T obj, int root) {
        Tensor received = rank == root ? withEncoded(obj, t -> bcast(t, root)) : bcast(null, root);
        return ObjectCodec.decode(received, "bcastObj from root " + root);
    }

    /** The root gets every rank's object in rank order; others get an empty list. */
    public <T extends Serializable> List<T> gatherObj(T obj, int root) {
        return ObjectCodec.decodeAll(withEncoded(obj, t -> gather(t, root)), "gatherObj");
    }

    /** Every rank gets every rank's object in rank order. */
    public <T extends Serializable> List<T> allgatherObj(T obj) {
        return ObjectCodec.decodeAll(withEncoded(obj, this::allgather), "allgatherObj");
    }

    /**
     * Runs a tensor operation on the serialized object. An object that cannot be serialized goes
     * in as null, which the operation announces to its peers as a tensor that cannot be sent, so
     * that they fail too rather than wait; this rank then throws the serialization error.
     */
    private <R> R withEncoded(Serializable obj, Function<Tensor, R> op) {
        Tensor encoded;
        try {
            encoded = ObjectCodec.encode(obj);
        } catch (CommunicationException unserializable) {
            try {
                op.apply(null);
            } catch (CommunicationException announced) {
                unserializable.addSuppressed(announced);
            }
            throw unserializable;
        }
        return op.apply(encoded);
    }

    /**
     * For checks that must end alike on every rank: every rank passes its own problem (null if
     * none) and gets "rank r: problem" for each rank that had one, in rank order, the same list
     * on every rank (empty if none had). Collective.
     */
    public List<String> problemsOnRanks(String problemOrNull) {
        List<String> all = allgatherObj(problemOrNull);
        List<String> problems = new ArrayList<>();
        for (int r = 0; r < all.size(); r++) {
            if (all.get(r) != null) {
                problems.add("rank " + r + ": " + all.get(r));
            }
        }
        return problems;
    }

    /**
     * Every rank passes its value of something that must be one and the same everywhere (read
     * by each rank for itself, say); returns null when all are equal, else which ranks have which
     * ("rank 0 has 10; ranks 1, 2 have 9"), the same text on every rank. Collective.
     */
    public String disagreement(Serializable value) {
        List<Serializable> all = allgatherObj(value);
        Map<Serializable, List<Integer>> ranksOf = new LinkedHashMap<>();
        for (int r = 0; r < all.size(); r++) {
            ranksOf.computeIfAbsent(all.get(r), v -> new ArrayList<>()).add(r);
        }
        if (ranksOf.size() == 1) {
            return null;
        }
        List<String> groups = new ArrayList<>();
        ranksOf.forEach((v, ranks) -> groups.add((ranks.size() == 1 ? "rank " : "ranks ")
                + ranks.stream().map(String::valueOf).collect(Collectors.joining(", "))
                + (ranks.size() == 1 ? " has " : " have ") + v));
        return String.join("; ", groups);
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
        ModelSync.bcastData(this, module, root);
    }

    /**
     * Replaces every parameter's gradient by its mean over the ranks (missing gradients count as
     * zeros), in parameter order, with one allreduce.
     */
    public void meanGrad(Module module) {
        ModelSync.meanGrad(this, module);
    }

    /**
     * Replaces every parameter's gradient by its sum over the ranks (missing gradients count as
     * zeros), for losses that each rank computes a share of; in parameter order, with one allreduce.
     */
    public void sumGrad(Module module) {
        ModelSync.sumGrad(this, module);
    }

    // ------------------------------------------------------------------------------------------
    // Failure

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
        closed = true;
        p2p.close();
        if (!MpiJob.enteringMpiUnlessEnding()) {
            return; // the job is ending: finalization frees the MPI communicators, maybe already did
        }
        try {
            for (Intracomm c : owned) {
                c.free();
            }
        } catch (MPIException e) {
            throw new CommunicationException("freeing a communicator: " + e.getMessage(), e);
        } finally {
            MpiJob.leftMpi();
        }
    }

    // ------------------------------------------------------------------------------------------
    // Internals

    /**
     * The headers of {@code tensors}, once every rank has found the first one and the
     * {@code terms} (chunk size, op, root) the same as its own, and {@code check} (given the
     * headers) has found no problem on any rank; otherwise every rank throws
     * ({@link #disagreement}). A tensor that cannot travel (null, an unsupported dtype) is such a
     * problem too, so no rank is left waiting in the collective that would have followed. One
     * small all-reduce, whatever the terms.
     */
    private TensorHeader[] agree(String op, Terms terms, Supplier<String> rule,
            Function<TensorHeader[], String> check, Tensor... tensors) throws MPIException {
        LocalCheck mine = LocalCheck.of(check, tensors);
        TensorHeader first = mine.headers()[0];
        long fp = first == null ? 0 : first.fingerprint();
        long nbytes = first == null ? -1 : first.nbytes;
        if (AgreementRound.sameOnEveryRank(headerCollectives, mine.problem() == null, fp, nbytes, terms.chunk(),
                terms.op(), terms.root())) {
            return mine.headers();
        }
        throw disagreement(op, rule, mine, terms);
    }

    /**
     * What the ranks of an in-step collective must pass alike besides their tensors: the chunk
     * size it splits by, the op's ordinal ({@link #NO_OP} for none, or a null op, which the
     * reductions' own check rejects) and the root ({@link #NO_ROOT} for none).
     */
    private record Terms(long chunk, int op, int root) {
        long[] values() {
            return new long[] {chunk, op, root};
        }
    }

    private static final int NO_OP = -1;
    private static final int NO_ROOT = -1;

    /**
     * A rank's tensors as a collective checks them: their headers (null for a tensor that cannot
     * travel) and this rank's problem with them, or null.
     */
    private record LocalCheck(TensorHeader[] headers, String problem) {
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
     * Once every rank knows that some rank's tensors broke a collective's rule, or that the
     * ranks' terms ({@code terms} on this rank: chunk size, op, root) differ: gathers every rank's
     * headers and terms and returns the exception to throw, naming {@code rule} (built only now)
     * or each term that differs with every rank's value, every rank's tensors and this rank's own
     * problem. Every rank must call it.
     */
    private CommunicationException disagreement(String op, Supplier<String> rule, LocalCheck mine, Terms terms)
            throws MPIException {
        TensorHeader[] headers = mine.headers();
        int k = headers.length;
        ByteBuffer buf = HeaderBuffers.mine(k);
        for (int i = 0; i < k; i++) {
            if (headers[i] == null) {
                TensorHeader.writeInvalid(buf.asLongBuffer(), i * TensorHeader.LONGS, Outgoing.UNSENDABLE);
            } else {
                headers[i].write(buf.asLongBuffer(), i * TensorHeader.LONGS);
            }
        }
        ByteBuffer all = HeaderBuffers.all(size * k);
        headerCollectives.allGather(buf, k * TensorHeader.BYTES, MPI.BYTE, all, k * TensorHeader.BYTES, MPI.BYTE);
        List<String> ranks = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            List<String> described = new ArrayList<>();
            for (int i = 0; i < k; i++) {
                int at = (r * k + i) * TensorHeader.LONGS;
                described.add(TensorHeader.isInvalid(all.asLongBuffer(), at) ? "(none)"
                        : TensorHeader.read(all.asLongBuffer(), at, op).toString());
            }
            ranks.add("rank " + r + ": " + String.join(" into ", described));
        }
        long[] mineTerms = terms.values();
        int t = mineTerms.length;
        long[] everyTerms = new long[size * t];
        headerCollectives.allGather(mineTerms, t, MPI.LONG, everyTerms, t, MPI.LONG);
        List<String> differ = new ArrayList<>();
        if (differs(everyTerms, t, 0)) {
            differ.add("the chunk size (setChunkBytes or -Dmn4j.chunkBytes) must be the same on every rank, got "
                    + perRank(everyTerms, t, 0, String::valueOf));
        }
        if (differs(everyTerms, t, 1)) {
            differ.add("the op must be the same on every rank, got " + perRank(everyTerms, t, 1, Communicator::opName));
        }
        if (differs(everyTerms, t, 2)) {
            differ.add("the root must be the same on every rank, got " + perRank(everyTerms, t, 2, String::valueOf));
        }
        String what = differ.isEmpty() ? rule.get() + ", got " : String.join("; ", differ) + "; the tensors: ";
        return new CommunicationException(op + ": " + what + String.join(", ", ranks)
                + (mine.problem() == null ? "" : " (on rank " + rank + ": " + mine.problem() + ")"));
    }

    /** Whether field {@code at} of the {@code width}-long rows of {@code rows} differs between rows. */
    private static boolean differs(long[] rows, int width, int at) {
        for (int r = width; r < rows.length; r += width) {
            if (rows[r + at] != rows[at]) {
                return true;
            }
        }
        return false;
    }

    /** "rank 0: v0, rank 1: v1, ...": field {@code at} of each rank's {@code width}-long row. */
    private static String perRank(long[] rows, int width, int at, LongFunction<String> describe) {
        List<String> each = new ArrayList<>();
        for (int r = 0; r * width < rows.length; r++) {
            each.add("rank " + r + ": " + describe.apply(rows[r * width + at]));
        }
        return String.join(", ", each);
    }

    private static String opName(long ordinal) {
        return ordinal < 0 || ordinal >= ReduceOp.values().length ? "null" : ReduceOp.values()[(int) ordinal].name();
    }

    /** The rule of bcastInto. */
    private static final String SAME_ROOT_EVERYWHERE = "every rank must pass the same root, dtype and shape";

    /** This rank's problem with a reduction's op and root, given its tensor's header, or null. */
    private String reductionProblem(ReduceOp op, boolean rooted, int root, TensorHeader x) {
        if (op == null) {
            return "a null op";
        }
        if (rooted && rootProblem(root) != null) {
            return rootProblem(root);
        }
        if (op == ReduceOp.MEAN && !x.type.isFloatingPoint()) {
            return "MEAN needs a floating-point tensor, got " + x;
        }
        return null;
    }

    private static String firstProblem(String a, String b) {
        return a != null ? a : b;
    }

    /** The exchange mask of one rank ({@link #everyone} and {@link #nobody} are made once). */
    private boolean[] only(int r) {
        boolean[] one = new boolean[size];
        one[r] = true;
        return one;
    }

    /**
     * After an exchange, throws on every rank that heard of an invalid input (its own or a
     * peer's), naming the ranks, what they passed, and this rank's own problem.
     */
    private void throwIfInvalid(String op, Supplier<String> rule, Wire.Exchanged got, Outgoing mine) {
        if (got.invalid().isEmpty()) {
            return;
        }
        List<String> bad = new ArrayList<>();
        got.invalid().forEach((r, code) -> bad.add("rank " + r + " passed " + Outgoing.describe(code)));
        throw new CommunicationException(op + ": " + rule.get() + ", but " + String.join(", ", bad)
                + (mine.problem() == null ? "" : " (on rank " + rank + ": " + mine.problem() + ")"));
    }

    private static long sumBytes(List<Tensor> ts) {
        long n = 0;
        for (Tensor t : ts) {
            n += t == null ? 0 : t.nbytes();
        }
        return n;
    }

    private String ctx(String op, int peer, int tag) {
        return op + " (rank " + rank + (op.contains("send") ? " to rank " : " from rank ") + peer
                + ", tag " + tag + ")";
    }

    private void checkPeer(String op, int peer, int tag, boolean selfAllowed) {
        if (peer < 0 || peer >= size) {
            throw new CommunicationException(op + " on rank " + rank + ": peer rank " + peer
                    + " is outside [0, " + size + ")");
        }
        if (tag < 0 || tag > maxTag) {
            throw new CommunicationException(op + " on rank " + rank + " with rank " + peer + ": tag " + tag
                    + " is outside [0, " + maxTag + "] (MPI_TAG_UB of this MPI, see maxTag())");
        }
        if (peer == rank && !selfAllowed) {
            throw new CommunicationException(op + " on rank " + rank + ": a blocking " + op
                    + " to oneself would deadlock; use isend/irecv or keep the tensor");
        }
    }

    /**
     * The header of {@code x}; if it cannot be sent (null, an unsupported dtype), throws after
     * telling {@code dst}, whose receive would otherwise wait for it.
     */
    private TensorHeader sendableHeader(String op, Tensor x, int dst, int tag) {
        try {
            return Outgoing.headerOf(x);
        } catch (CommunicationException e) {
            call(op, () -> {
                p2p.sendUnsendable(dst, tag);
                return null;
            });
            throw new CommunicationException(ctx(op, dst, tag) + ": " + e.getMessage() + " (rank " + dst
                    + "'s receive fails with it)", e);
        }
    }

    /** What is wrong with {@code root} on this rank, or null. */
    private String rootProblem(int root) {
        return root < 0 || root >= size ? "root rank " + root + " is outside [0, " + size + ")" : null;
    }

    /**
     * For the rooted collectives without an agreement round of their own (gather, scatter):
     * returns once every rank has passed the same root, in range; otherwise every rank throws
     * ({@link #rootDisagreement}), before any data moves. One small all-reduce.
     */
    private void agreeOnRoot(String op, int root) throws MPIException {
        if (!AgreementRound.sameOnEveryRank(headerCollectives, rootProblem(root) == null, root)) {
            throw rootDisagreement(op, root);
        }
    }

    /**
     * Once every rank knows that the ranks passed different roots, or one outside the ranks: the
     * exception to throw, naming every rank's root and this rank's own problem with it (one more
     * round, on this error path only). Every rank must call it.
     */
    private CommunicationException rootDisagreement(String op, int root) throws MPIException {
        long[] roots = new long[size];
        headerCollectives.allGather(new long[] {root}, 1, MPI.LONG, roots, 1, MPI.LONG);
        String mine = rootProblem(root);
        if (!differs(roots, 1, 0)) { // the same root everywhere, and outside the ranks
            return new CommunicationException(op + " on rank " + rank + ": " + mine);
        }
        return new CommunicationException(op + ": the root must be the same on every rank, got "
                + perRank(roots, 1, 0, String::valueOf) + (mine == null ? "" : " (on rank " + rank + ": " + mine + ")"));
    }

    @FunctionalInterface
    private interface MpiCall<T> {
        T call() throws MPIException;
    }

    /**
     * Runs an operation's MPI calls, MPI errors as {@link CommunicationException}s. A closed
     * communicator's MPI handles are freed: using them would abort the job (MPI_ERR_COMM), so the
     * operation throws here instead.
     */
    private <T> T call(String op, MpiCall<T> body) {
        if (closed) {
            throw new IllegalStateException(op + " on rank " + rank + ": communicator closed (close() was called)");
        }
        MpiJob.enteringMpi();
        try {
            return body.call();
        } catch (MPIException e) {
            throw new CommunicationException(op + ": MPI error: " + e.getMessage(), e);
        } finally {
            MpiJob.leftMpi();
        }
    }
}
