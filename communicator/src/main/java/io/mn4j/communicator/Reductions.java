package io.mn4j.communicator;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import mpi.Datatype;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;
import mpi.Op;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;

/**
 * The reduction engine: element-wise reductions of a tensor whose dtype, shape, op, root and chunk
 * size every rank has already agreed on ({@link CheckedCollectives}), as one MPI reduction per
 * chunk, in step on every rank.
 */
final class Reductions {
    /** The root of a reduction whose result goes to every rank. */
    private static final int EVERY_RANK = -1;

    private final Intracomm comm;
    private final int rank;
    private final int size;

    Reductions(Intracomm comm) throws MPIException {
        this.comm = comm;
        this.rank = comm.getRank();
        this.size = comm.getSize();
    }

    /**
     * The reduction of {@code x} (header {@code h}) on every rank: written into {@code into}, which
     * is returned, or without one a new tensor.
     */
    Tensor allreduce(TensorHeader h, Tensor x, ReduceOp op, Tensor into, long chunkBytes) throws MPIException {
        return reduce(h, x, op, EVERY_RANK, into, chunkBytes);
    }

    /** The reduction of {@code x} (header {@code h}) as a new tensor at {@code root}; null elsewhere. */
    Tensor reduce(TensorHeader h, Tensor x, ReduceOp op, int root, long chunkBytes) throws MPIException {
        return reduce(h, x, op, root, null, chunkBytes);
    }

    private Tensor reduce(TensorHeader h, Tensor x, ReduceOp op, int root, Tensor into, long chunkBytes)
            throws MPIException {
        boolean receives = root == EVERY_RANK || rank == root;
        WireType staged = h.type.reduceAs == null ? h.type : WireType.of(h.type.reduceAs);
        Staging s = stage(h, x, into, receives);
        Tensor source = s.inPlace() ? s.work() : x;
        Op mpiOp = mpiOp(op, h.type);
        long nbytes = h.numel * staged.elementSize;
        long chunk = (chunkBytes / staged.elementSize) * staged.elementSize;
        for (long off = 0; off < nbytes; off += chunk) {
            int len = (int) Math.min(chunk, nbytes - off);
            ByteBuffer in = TensorBytes.wire(source, off, len);
            ByteBuffer out = receives ? TensorBytes.wire(s.work(), off, len) : TensorBytes.EMPTY;
            reduceChunk(in, out, len / staged.elementSize, staged.mpiType(), mpiOp, s.inPlace(), root);
        }
        Reference.reachabilityFence(x);
        return receives ? finish(s.work(), h, op, into) : null;
    }

    /**
     * Where MPI writes the result ({@code work}, null on a rank that receives nothing), and
     * whether it reduces that tensor in place (MPI_IN_PLACE) or from x's own memory into it.
     */
    private record Staging(Tensor work, boolean inPlace) {
    }

    /** A contiguous CPU tensor of an MPI dtype is used as it is; anything else is staged in a contiguous copy. */
    private static Staging stage(TensorHeader h, Tensor x, Tensor into, boolean receives) {
        if (h.type.reduceAs != null) {
            return new Staging(x.cpu().to(h.type.reduceAs).contiguous(), true);
        }
        if (into != null && TensorBytes.isWireReady(into)) {
            boolean shared = TensorBytes.overlap(x, into);
            if (shared && TensorBytes.isWireReady(x) && x.data_ptr().address() == into.data_ptr().address()) {
                return new Staging(into, true); // out is x
            }
            if (shared || !TensorBytes.isWireReady(x)) {
                into.view(x.sizes()).copy_(shared ? x.clone() : x); // x staged in out, reduced there
                return new Staging(into, true);
            }
            return new Staging(into, false);
        }
        if (TensorBytes.isWireReady(x)) {
            return new Staging(receives ? h.allocate() : null, false);
        }
        return new Staging(x.contiguous().cpu().clone(), true);
    }

    private static Op mpiOp(ReduceOp op, WireType type) {
        if (type == WireType.BOOL && op == ReduceOp.SUM) {
            return MPI.MAX; // logical or
        }
        return switch (op) {
            case SUM, MEAN -> MPI.SUM;
            case MAX -> MPI.MAX;
            case MIN -> MPI.MIN;
            case PROD -> MPI.PROD;
        };
    }

    private void reduceChunk(ByteBuffer in, ByteBuffer out, int count, Datatype type, Op op, boolean inPlace, int root)
            throws MPIException {
        if (root == EVERY_RANK) {
            if (inPlace) {
                comm.allReduce(out, count, type, op);
            } else {
                comm.allReduce(in, out, count, type, op);
            }
        } else if (rank == root && inPlace) {
            comm.reduce(out, count, type, op, root);
        } else {
            comm.reduce(in, out, count, type, op, root);
        }
    }

    /** The result in the input's dtype (MEAN divided, bool from its integer sum), written into {@code into} if given. */
    private Tensor finish(Tensor work, TensorHeader h, ReduceOp op, Tensor into) {
        if (op == ReduceOp.MEAN) {
            work.div_(new Scalar((double) size));
        }
        Tensor result = h.type == WireType.BOOL ? work.ne(new Scalar(0L))
                : h.type.reduceAs == null ? work : work.to(h.type.scalarType);
        if (into == null || result == into) {
            return result;
        }
        into.copy_(result.view(into.sizes()));
        return into;
    }
}
