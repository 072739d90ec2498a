package io.mn4j.gnn.partition;

import io.mn4j.communicator.Agreement;
import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.JobInputException;
import io.mn4j.gnn.graph.Csr;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.io.MappedNpy;
import io.mn4j.gnn.io.Npy;
import io.mn4j.gnn.io.NpyFormatException;
import io.mn4j.tensor.Tensors;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * Loads partitions written by {@link PartitionWriter}. Loading partition {@code k} reads only
 * {@code metadata.json} and {@code part-k/}, and checks every array against the metadata (type,
 * shape, CSR structure, id and label ranges): any problem is a {@link PartitionFormatException}
 * naming the file and what was wrong. A job loads with {@link #load(Communicator, Path)}, so that
 * a problem with one rank's files stops every rank with that message.
 */
public final class PartitionReader {
    private PartitionReader() {}

    /** Reads and checks {@code metadata.json} only. */
    public static PartitionMetadata readMetadata(Path dir) throws IOException {
        return PartitionMetadata.read(dir);
    }

    /**
     * Loads partition {@code comm.rank()} of {@code dir} on every rank, the graph being split into
     * one partition per rank. Collective: the ranks agree on the outcome before returning, so
     * when any rank's files are missing or wrong, every rank throws instead of some waiting in the
     * next collective (such as {@code GraphShardManager.build}) for a rank that never comes.
     *
     * <p>Each rank reads its own {@code metadata.json} (a node-local copy, say): the ranks then
     * compare them, since partitions cut by different partitionings do not fit together. A host
     * needs only {@code metadata.json} and the folders of its own ranks' partitions.
     *
     * @throws JobInputException on every rank when any rank failed: the failed rank's carries its
     *     {@link PartitionFormatException} (or I/O error) as the cause, naming the file and what was
     *     wrong; the others name each failed rank and its message (both name the failed rank's host). Also on every rank when the
     *     ranks read different metadata, naming which ranks read what.
     */
    public static PartitionData load(Communicator comm, Path dir) {
        return load(comm, dir, false);
    }

    /**
     * As {@link #load(Communicator, Path)}; with {@code mapFeatures} each rank's features are a
     * memory map of its {@code features.npy} ({@link MappedNpy}: rows read on demand, not counted by
     * JavaCPP's {@code maxPhysicalBytes}) instead of a copy in memory.
     */
    public static PartitionData load(Communicator comm, Path dir, boolean mapFeatures) {
        // Each host may hold only its own ranks' partitions: say which host looked where.
        PartitionData part = Agreement.agree(comm, "loading partition " + comm.rank() + " of " + dir + " on host " + LocalHost.name(),
                () -> load(dir, comm.rank(), comm.size(), mapFeatures));
        try {
            Agreement.requireSame(comm, "metadata (here " + dir.resolve(PartitionMetadata.FILE) + ")", part.metadata().toString());
        } catch (RuntimeException e) {
            part.close();
            throw e;
        }
        return part;
    }

    /**
     * Loads partition {@code part} (this process alone; a job uses {@link #load(Communicator, Path)}).
     *
     * @param expectedParts number of partitions the job expects (its number of ranks), or -1 to accept any
     */
    public static PartitionData load(Path dir, int part, int expectedParts) throws IOException {
        return load(dir, part, expectedParts, false);
    }

    /**
     * As {@link #load(Path, int, int)}; with {@code mapFeatures} the features are a memory map of
     * {@code features.npy} ({@link MappedNpy}) instead of a copy in memory.
     */
    public static PartitionData load(Path dir, int part, int expectedParts, boolean mapFeatures) throws IOException {
        PartitionMetadata m = PartitionMetadata.read(dir);
        Path meta = dir.resolve(PartitionMetadata.FILE);
        if (expectedParts >= 0 && m.numParts() != expectedParts) {
            throw new PartitionFormatException(meta + ": the graph is split into " + m.numParts() + " partitions but the job expects "
                    + expectedParts + " (one per rank); re-partition with " + expectedParts + " parts");
        }
        if (part < 0 || part >= m.numParts()) {
            throw new PartitionFormatException(meta + ": partition " + part + " requested but there are " + m.numParts());
        }
        Path pd = dir.resolve(PartitionWriter.partDir(part));
        if (!Files.isDirectory(pd)) throw new PartitionFormatException("missing directory " + pd + " (partition " + part + " of " + m.numParts() + ")");
        long nk = m.nodes(part), ek = m.edges(part), n = m.numNodes();
        String where = " (partition " + part + ": " + nk + " nodes, " + ek + " edges per " + PartitionMetadata.FILE + ")";
        try (PointerScope s = new PointerScope()) {
            Tensor ids = read(pd, "node_ids.npy", ScalarType.Long, new long[] {nk}, where);
            checkRange(pd.resolve("node_ids.npy"), ids, n);
            Tensor rowptr = read(pd, "rowptr.npy", ScalarType.Long, new long[] {nk + 1}, where);
            Tensor col = read(pd, "col.npy", ScalarType.Long, new long[] {ek}, where);
            checkRowptr(pd.resolve("rowptr.npy"), rowptr, ek);
            checkRange(pd.resolve("col.npy"), col, n);
            Tensor w = null;
            if (m.weighted()) {
                w = read(pd, "edge_weight.npy", null, new long[] {ek}, where);
                if (!w.is_floating_point()) throw new PartitionFormatException(pd.resolve("edge_weight.npy") + ": must be floating point, got " + Tensors.type(w));
            }
            Tensor x = null;
            if (m.featureSize() > 0) {
                x = read(pd, "features.npy", m.featureType().equals("float64") ? ScalarType.Double : ScalarType.Float,
                        new long[] {nk, m.featureSize()}, where, mapFeatures);
            }
            Tensor y = null;
            if (m.hasLabels()) {
                y = read(pd, "labels.npy", ScalarType.Long, new long[] {nk}, where);
                checkLabels(pd.resolve("labels.npy"), y, m.numClasses());
            }
            Tensor tr = null, va = null, te = null;
            if (m.hasMasks()) {
                tr = read(pd, "train_mask.npy", ScalarType.Bool, new long[] {nk}, where);
                va = read(pd, "val_mask.npy", ScalarType.Bool, new long[] {nk}, where);
                te = read(pd, "test_mask.npy", ScalarType.Bool, new long[] {nk}, where);
            }
            Csr adj = Csr.of(nk, n, rowptr, col, w);
            return new PartitionData(m, part, ids, adj, x, y, tr, va, te);
        }
    }

    /**
     * The new id of every original node, read from all partitions' {@code node_ids.npy}: result
     * {@code [original] = new id}. For tools and tests that compare with the unpartitioned graph.
     */
    public static long[] newIds(Path dir) throws IOException {
        PartitionMetadata m = PartitionMetadata.read(dir);
        long[] newId = new long[Math.toIntExact(m.numNodes())];
        Arrays.fill(newId, -1);
        for (int k = 0; k < m.numParts(); k++) {
            Path pd = dir.resolve(PartitionWriter.partDir(k));
            try (PointerScope s = new PointerScope()) {
                Tensor ids = read(pd, "node_ids.npy", ScalarType.Long, new long[] {m.nodes(k)}, " (partition " + k + ")");
                long[] a = Tensors.toLongArray(ids);
                for (int i = 0; i < a.length; i++) {
                    if (a[i] < 0 || a[i] >= newId.length || newId[(int) a[i]] >= 0) {
                        throw new PartitionFormatException(pd.resolve("node_ids.npy") + ": node " + a[i] + " is out of range or owned twice");
                    }
                    newId[(int) a[i]] = m.offset(k) + i;
                }
            }
        }
        return newId;
    }

    private static Tensor read(Path pd, String name, ScalarType type, long[] shape, String where) throws IOException {
        return read(pd, name, type, shape, where, false);
    }

    private static Tensor read(Path pd, String name, ScalarType type, long[] shape, String where, boolean map) throws IOException {
        Path f = pd.resolve(name);
        if (!Files.exists(f)) throw new PartitionFormatException("missing file " + f + where);
        Tensor t;
        try {
            t = map ? MappedNpy.map(f) : Npy.read(f);
        } catch (NpyFormatException e) {
            throw new PartitionFormatException("corrupt array: " + e.getMessage() + where, e);
        }
        if (type != null && Tensors.type(t) != type) {
            throw new PartitionFormatException(f + ": type " + Npy.descr(Tensors.type(t)) + ", expected " + Npy.descr(type) + where);
        }
        if (!Arrays.equals(Tensors.shape(t), shape)) {
            throw new PartitionFormatException(f + ": shape " + Tensors.shapeString(t) + ", expected " + Arrays.toString(shape) + where);
        }
        return t;
    }

    private static void checkRowptr(Path f, Tensor rowptr, long ek) throws PartitionFormatException {
        long[] rp = Tensors.toLongArray(rowptr);
        if (rp[0] != 0 || rp[rp.length - 1] != ek) {
            throw new PartitionFormatException(f + ": must run from 0 to " + ek + ", got " + rp[0] + ".." + rp[rp.length - 1]);
        }
        for (int i = 0; i + 1 < rp.length; i++) {
            if (rp[i + 1] < rp[i]) throw new PartitionFormatException(f + ": decreases at row " + i);
        }
    }

    /** Labels must be classes in [0, numClasses) or {@link Graph#UNLABELLED}: anything else fails later, deep in the loss. */
    private static void checkLabels(Path f, Tensor labels, int numClasses) throws PartitionFormatException {
        try (PointerScope s = new PointerScope()) {
            Tensor bad = labels.lt(new Scalar(0)).logical_and(labels.ne(new Scalar(Graph.UNLABELLED)))
                    .logical_or(labels.ge(new Scalar(numClasses))).nonzero();
            if (bad.size(0) > 0) {
                long i = bad.get(0).item_long();
                long more = bad.size(0) - 1;
                throw new PartitionFormatException(f + ": label " + labels.get(i).item_long() + " of local node " + i + " is outside [0, "
                        + numClasses + ") (numClasses in " + PartitionMetadata.FILE + ") and is not " + Graph.UNLABELLED + " (unlabelled)"
                        + (more > 0 ? "; " + more + " more such labels" : ""));
            }
        }
    }

    private static void checkRange(Path f, Tensor ids, long n) throws PartitionFormatException {
        if (ids.numel() == 0) return;
        try (PointerScope s = new PointerScope()) {
            long min = ids.min().item_long(), max = ids.max().item_long();
            if (min < 0 || max >= n) throw new PartitionFormatException(f + ": ids must be in [0," + n + "), found " + (min < 0 ? min : max));
        }
    }
}
