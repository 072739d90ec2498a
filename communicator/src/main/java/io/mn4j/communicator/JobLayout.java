package io.mn4j.communicator;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import mpi.MPI;
import mpi.MPIException;

/**
 * The host of every rank of the job, learnt once at the start: a rank that has stopped answering
 * or died can no longer say where it ran, and the reports that name it should.
 */
final class JobLayout {
    /** MPI_MAX_PROCESSOR_NAME of Open MPI. */
    private static final int NAME_BYTES = 256;
    private static volatile String[] hosts = new String[0];
    /** This process's world rank, once the hosts are known. */
    private static volatile int self = -1;

    private JobLayout() {
    }

    /** Gathers every rank's host name (collective over MPI_COMM_WORLD). */
    static void learn() throws MPIException {
        byte[] mine = new byte[NAME_BYTES];
        byte[] name = MPI.getProcessorName().getBytes(StandardCharsets.UTF_8);
        System.arraycopy(name, 0, mine, 0, Math.min(name.length, NAME_BYTES));
        int size = MPI.COMM_WORLD.getSize();
        byte[] all = new byte[NAME_BYTES * size];
        MPI.COMM_WORLD.allGather(mine, NAME_BYTES, MPI.BYTE, all, NAME_BYTES, MPI.BYTE);
        String[] names = new String[size];
        for (int r = 0; r < size; r++) {
            int end = r * NAME_BYTES;
            while (end < (r + 1) * NAME_BYTES && all[end] != 0) {
                end++;
            }
            names[r] = new String(all, r * NAME_BYTES, end - r * NAME_BYTES, StandardCharsets.UTF_8);
        }
        self = MPI.COMM_WORLD.getRank();
        hosts = names;
    }

    /** Whether world rank {@code worldRank} runs on another host than this process (false before the hosts are known). */
    static boolean onOtherHost(int worldRank) {
        String[] h = hosts;
        int me = self;
        return me >= 0 && worldRank >= 0 && worldRank < h.length && me < h.length && !h[worldRank].equals(h[me]);
    }

    /** "rank 2 (host node1)", or "rank 2" before the hosts are known. */
    static String rank(int worldRank) {
        String[] h = hosts;
        return worldRank >= 0 && worldRank < h.length ? "rank " + worldRank + " (host " + h[worldRank] + ")" : "rank " + worldRank;
    }

    /** "ranks 2, 3 (host node1), rank 5 (host node2)": the ranks grouped by host, in rank order. */
    static String ranks(List<Integer> worldRanks) {
        List<String> parts = new ArrayList<>();
        byHost(worldRanks).forEach((host, rs) -> parts.add(list(rs) + " (host " + host + ")"));
        return String.join(", ", parts);
    }

    /** "node1: ranks 0, 1; node2: ranks 2, 3": where every rank of the job runs. */
    private static String byHost() {
        List<Integer> all = new ArrayList<>();
        for (int r = 0; r < hosts.length; r++) {
            all.add(r);
        }
        List<String> parts = new ArrayList<>();
        byHost(all).forEach((host, rs) -> parts.add(host + ": " + list(rs)));
        return String.join("; ", parts);
    }

    /** "; the job's ranks: node1: ranks 0, 1; node2: ranks 2, 3", or nothing for a job on one host. */
    static String acrossHosts() {
        return Arrays.stream(hosts).distinct().count() > 1 ? "; the job's ranks: " + byHost() : "";
    }

    private static Map<String, List<Integer>> byHost(List<Integer> worldRanks) {
        String[] h = hosts;
        Map<String, List<Integer>> byHost = new LinkedHashMap<>();
        for (int r : worldRanks) {
            byHost.computeIfAbsent(r >= 0 && r < h.length ? h[r] : "unknown", k -> new ArrayList<>()).add(r);
        }
        return byHost;
    }

    /** "rank 2" or "ranks 2, 3". */
    private static String list(List<Integer> ranks) {
        return (ranks.size() == 1 ? "rank " : "ranks ") + String.join(", ", ranks.stream().map(String::valueOf).toList());
    }
}
