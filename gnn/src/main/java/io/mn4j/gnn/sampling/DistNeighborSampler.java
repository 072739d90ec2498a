package io.mn4j.gnn.sampling;

import io.mn4j.communicator.Communicator;
import io.mn4j.gnn.graph.Csr;
import io.mn4j.communicator.Agreement;
import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;

/**
 * Samples the neighbourhoods of seed nodes on a graph partitioned across the ranks of a
 * communicator (PyG's {@code DistNeighborSampler}, bulk-synchronous over MPI). Rank p owns the
 * nodes {@code [offsets[p], offsets[p+1])} and their in-edges; a node's neighbours are sampled by
 * its owner, so no rank needs another's edges.
 *
 * <p>Hop h (h = 0 from the seeds outwards) samples at most {@code fanouts[h]} in-neighbours of each
 * node reached so far, without replacement, or all of them with fanout -1 (PyG's
 * {@code num_neighbors}). Which neighbours a node gets depends only on the sampler's seed, the
 * round, the hop and the node: any number of ranks, and one process, sample the same subgraph
 * for the same seeds, which is what the tests compare.
 *
 * <p>Collective: every rank calls {@link #sample} the same number of times (a rank without seeds
 * passes none), and per hop the ranks exchange requests and replies in two all-to-alls.
 *
 * <p>"The same subgraph" holds for the same global numbering of the nodes and the same order of
 * each node's stored in-edges: a partitioner renumbers nodes per partition count, so runs on
 * partitions of one graph cut for different rank counts sample differently (each correctly).
 * The sampler keeps a copy of this rank's in-edge sources on the Java heap (8 bytes per edge).
 */
public final class DistNeighborSampler {
    private final Communicator comm;
    private final long[] offsets;
    private final long[] rowptr;
    private final long[] col;
    private final int[] fanouts;
    private final long seed;

    /**
     * @param comm         the ranks sharing the graph, rank p owning partition p
     * @param offsets      partition boundaries, {@code comm.size() + 1} non-decreasing entries from 0
     * @param localInEdges in-edges of this rank's nodes: row i = node {@code offsets[rank] + i},
     *                     columns the sources' global ids
     * @param fanouts      neighbours per node and hop, from the seeds outwards (-1: all); one hop
     *                     per layer of the model
     * @param seed         seed of the sampling
     * @throws io.mn4j.communicator.JobInputException on every rank when any rank's arguments are wrong
     *     (naming the rank and what), or when the ranks pass different offsets or fanouts
     */
    public DistNeighborSampler(Communicator comm, long[] offsets, Csr localInEdges, int[] fanouts, long seed) {
        Agreement.agree(comm, "setting up the neighbour sampler", () -> {
            check(comm, offsets, localInEdges, fanouts);
            return null;
        });
        Agreement.requireSame(comm, "sampler offsets", Arrays.toString(offsets));
        Agreement.requireSame(comm, "sampler fanouts and seed", Arrays.toString(fanouts) + " seed " + seed);
        this.comm = comm;
        this.offsets = offsets.clone();
        this.rowptr = localInEdges.rowptrArray();
        this.col = Tensors.toLongArray(localInEdges.col());
        this.fanouts = fanouts.clone();
        this.seed = seed;
    }

    private static void check(Communicator comm, long[] offsets, Csr edges, int[] fanouts) {
        Owners.checkOffsets(comm, offsets);
        long owned = offsets[comm.rank() + 1] - offsets[comm.rank()];
        if (edges.numRows() != owned || edges.numCols() != offsets[comm.size()]) {
            throw new IllegalArgumentException("it owns " + owned + " of " + offsets[comm.size()]
                    + " nodes, but its in-edge matrix is " + edges.numRows() + " x " + edges.numCols());
        }
        if (fanouts.length == 0) {
            throw new IllegalArgumentException("fanouts must name at least one hop");
        }
        for (int f : fanouts) {
            if (f < 1 && f != -1) {
                throw new IllegalArgumentException("a fanout must be at least 1, or -1 for every neighbour; got "
                        + Arrays.toString(fanouts));
            }
        }
    }

    /** The partition boundaries (a copy): rank p owns {@code [offsets[p], offsets[p+1])}. */
    public long[] offsets() {
        return offsets.clone();
    }

    /** Hops, which is the number of layers a sample feeds. */
    public int hops() {
        return fanouts.length;
    }

    /**
     * The sampled neighbourhood of {@code seeds} (distinct global ids, any owner), as one
     * {@link Block} per hop, input layer first; the last block's destinations are the seeds, in
     * the given order. {@code round} tells batches apart: the same seeds in the same round give
     * the same sample. Collective: every rank passes the same round (with seeds of its own).
     *
     * @throws io.mn4j.communicator.JobInputException on every rank if any rank's seeds are out of
     *     range or repeat, naming the rank and the seed, or if the ranks pass different rounds
     */
    public Sample sample(long[] seeds, long round) {
        long numNodes = offsets[offsets.length - 1];
        Agreement.agree(comm, "sampling round " + round, () -> {
            checkSeeds(seeds, numNodes);
            return null;
        });
        // Owners sample by the round they are given: ranks out of step would mix batches silently.
        Agreement.requireSame(comm, "sampling round", Long.toString(round));
        List<Block> outwards = new ArrayList<>(fanouts.length);
        try {
            long[] frontier = seeds.clone();
            for (int hop = 0; hop < fanouts.length; hop++) {
                Block b = hop(frontier, round, hop);
                outwards.add(b);
                frontier = b.srcNodes();
            }
        } catch (RuntimeException e) {
            outwards.forEach(Block::close);
            throw e;
        }
        List<Block> inwards = new ArrayList<>(outwards);
        Collections.reverse(inwards);
        return new Sample(seeds.clone(), inwards);
    }

    private static void checkSeeds(long[] seeds, long numNodes) {
        NodeIndex seen = new NodeIndex(seeds.length);
        for (int i = 0; i < seeds.length; i++) {
            if (seeds[i] < 0 || seeds[i] >= numNodes) {
                throw new IllegalArgumentException("seed " + i + " is node " + seeds[i] + ", outside the graph's " + numNodes + " nodes");
            }
            int before = seen.indexOf(seeds[i]); // i for a node not seen yet: the seeds so far were distinct
            if (before != i) {
                throw new IllegalArgumentException("node " + seeds[i] + " is seed " + before + " and seed " + i
                        + ": seeds must be distinct");
            }
        }
    }

    /** One hop: the neighbours of {@code dst}, sampled by their owners, as a block. */
    private Block hop(long[] dst, long round, int hop) {
        Owners req = Owners.group(dst, offsets);
        int me = comm.rank();
        long[][] replies = new long[comm.size()][];
        try (PointerScope scope = new PointerScope()) {
            // This rank's own requests are answered here, not copied through the all-to-all.
            List<Tensor> asked = comm.alltoall(req.tensors(me));
            List<Tensor> answers = new ArrayList<>(comm.size());
            for (int p = 0; p < asked.size(); p++) {
                answers.add(Tensors.longs(p == me ? new long[0] : answer(Tensors.toLongArray(asked.get(p)), round, hop)));
            }
            List<Tensor> got = comm.alltoall(answers);
            for (int p = 0; p < replies.length; p++) {
                replies[p] = p == me ? answer(req.ids[me], round, hop) : Tensors.toLongArray(got.get(p));
            }
        }
        // Neighbour lists in dst order: where each dst node's list starts in its owner's reply.
        int[] owner = new int[dst.length];
        int[] start = new int[dst.length];
        int[] count = new int[dst.length];
        for (int p = 0; p < replies.length; p++) {
            int m = req.ids[p].length;
            int at = m;
            for (int k = 0; k < m; k++) {
                int i = req.positions[p][k];
                owner[i] = p;
                count[i] = (int) replies[p][k];
                start[i] = at;
                at += count[i];
            }
        }
        long[] rowptr = new long[dst.length + 1];
        for (int i = 0; i < dst.length; i++) {
            rowptr[i + 1] = rowptr[i] + count[i];
        }
        // Sources: the destinations, then each new neighbour in the order met.
        NodeIndex index = new NodeIndex((int) Math.min(Integer.MAX_VALUE / 4, dst.length + rowptr[dst.length]));
        long[] src = Arrays.copyOf(dst, (int) (dst.length + rowptr[dst.length]));
        for (long v : dst) {
            index.indexOf(v);
        }
        long[] cols = new long[(int) rowptr[dst.length]];
        for (int i = 0; i < dst.length; i++) {
            long[] r = replies[owner[i]];
            for (int k = 0; k < count[i]; k++) {
                long v = r[start[i] + k];
                int j = index.indexOf(v);
                src[j] = v;
                cols[(int) rowptr[i] + k] = j;
            }
        }
        return new Block(Arrays.copyOf(src, index.size()), dst.length, rowptr, cols);
    }

    /** This rank's reply to one rank's requests: the count of each node's sampled neighbours, then the neighbours. */
    private long[] answer(long[] nodes, long round, int hop) {
        long[] counts = new long[nodes.length];
        long[][] picked = new long[nodes.length][];
        int total = 0;
        for (int k = 0; k < nodes.length; k++) {
            picked[k] = neighbours(nodes[k], round, hop);
            counts[k] = picked[k].length;
            total += picked[k].length;
        }
        long[] out = Arrays.copyOf(counts, nodes.length + total);
        int at = nodes.length;
        for (long[] p : picked) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }

    /**
     * The sampled in-neighbours of owned node {@code v}: all of them, in stored order, when there
     * are no more than the fanout; otherwise fanout of them chosen uniformly without replacement
     * (seeded by seed, round, hop and v), in stored order.
     */
    private long[] neighbours(long v, long round, int hop) {
        int local = (int) (v - offsets[comm.rank()]);
        int lo = (int) rowptr[local], degree = (int) (rowptr[local + 1] - lo);
        int fanout = fanouts[hop];
        if (fanout < 0 || degree <= fanout) {
            return Arrays.copyOfRange(col, lo, lo + degree);
        }
        int[] chosen = choose(fanout, degree, new SplittableRandom(mix(mix(mix(seed, round), hop), v)));
        Arrays.sort(chosen);
        long[] out = new long[fanout];
        for (int i = 0; i < fanout; i++) {
            out[i] = col[lo + chosen[i]];
        }
        return out;
    }

    /**
     * {@code k} distinct positions of {@code [0, n)}, every such set equally likely: Floyd's
     * algorithm for small k (k draws, no array of n), else a partial Fisher-Yates shuffle.
     */
    private static int[] choose(int k, int n, SplittableRandom random) {
        int[] chosen = new int[k];
        if (k <= 64) {
            int m = 0;
            for (int j = n - k; j < n; j++) {
                int t = random.nextInt(j + 1);
                boolean taken = false;
                for (int i = 0; i < m && !taken; i++) {
                    taken = chosen[i] == t;
                }
                chosen[m++] = taken ? j : t;
            }
            return chosen;
        }
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        for (int i = 0; i < k; i++) {
            int j = i + random.nextInt(n - i);
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        System.arraycopy(order, 0, chosen, 0, k);
        return chosen;
    }

    /** SplitMix64's finaliser over {@code h} and {@code x}: a seed that changes with every input. */
    private static long mix(long h, long x) {
        long z = h + 0x9E3779B97F4A7C15L * (x + 1);
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
