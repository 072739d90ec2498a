package io.mn4j.gnn.sampling;

import io.mn4j.communicator.Communicator;
import io.mn4j.gnn.partition.PartitionMetadata;
import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.bytedeco.pytorch.Tensor;

/**
 * Global node ids grouped by the rank that owns them (rank p owns the ids
 * {@code [offsets[p], offsets[p+1])}), each group in the order the ids came, with the position
 * each id had: the request half of an all-to-all whose replies come back in the same order.
 */
final class Owners {
    /** Per rank, the ids it owns, in input order. */
    final long[][] ids;
    /** Per rank, where each of its ids stood in the input. */
    final int[][] positions;

    private Owners(long[][] ids, int[][] positions) {
        this.ids = ids;
        this.positions = positions;
    }

    /** Groups {@code nodes} by owner; every id must lie in {@code [0, offsets[last])}. */
    static Owners group(long[] nodes, long[] offsets) {
        int parts = offsets.length - 1;
        int[] owner = new int[nodes.length];
        int[] counts = new int[parts];
        for (int i = 0; i < nodes.length; i++) {
            owner[i] = PartitionMetadata.owner(offsets, nodes[i]);
            counts[owner[i]]++;
        }
        long[][] ids = new long[parts][];
        int[][] positions = new int[parts][];
        for (int p = 0; p < parts; p++) {
            ids[p] = new long[counts[p]];
            positions[p] = new int[counts[p]];
        }
        int[] filled = new int[parts];
        for (int i = 0; i < nodes.length; i++) {
            int p = owner[i], k = filled[p]++;
            ids[p][k] = nodes[i];
            positions[p][k] = i;
        }
        return new Owners(ids, positions);
    }

    /**
     * Throws unless {@code offsets} are partition boundaries for {@code comm}: {@code size() + 1}
     * non-decreasing entries from 0.
     */
    static void checkOffsets(Communicator comm, long[] offsets) {
        if (offsets.length != comm.size() + 1 || offsets[0] != 0) {
            throw new IllegalArgumentException("offsets must have " + (comm.size() + 1) + " entries starting at 0, got "
                    + Arrays.toString(offsets));
        }
        for (int p = 0; p < comm.size(); p++) {
            if (offsets[p + 1] < offsets[p]) {
                throw new IllegalArgumentException("offsets must not decrease, got " + Arrays.toString(offsets));
            }
        }
    }

    /** The groups as int64 tensors, one per rank, to send; empty for rank {@code self}, whose group stays here. */
    List<Tensor> tensors(int self) {
        List<Tensor> out = new ArrayList<>(ids.length);
        for (int p = 0; p < ids.length; p++) {
            out.add(Tensors.longs(p == self ? new long[0] : ids[p]));
        }
        return out;
    }
}
