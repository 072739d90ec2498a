package io.mn4j.mpitests.cluster;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.RecvHandle;
import io.mn4j.communicator.SendHandle;
import io.mn4j.communicator.ReduceOp;
import io.mn4j.communicator.TensorExchangeSuite;
import io.mn4j.mpitests.Check;
import io.mn4j.mpitests.Scenario;
import io.mn4j.mpitests.ScenarioSuite;
import io.mn4j.mpitests.SimulatedCluster;
import io.mn4j.mpitests.communicator.CollectiveSuite;
import io.mn4j.mpitests.communicator.GroupSuite;
import io.mn4j.mpitests.communicator.P2pSuite;
import io.mn4j.mpitests.functions.FunctionsSuite;
import io.mn4j.mpitests.functions.GradReductionSuite;
import io.mn4j.mpitests.functions.ModelSuite;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import mpi.MPI;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * What only a job across hosts can show, checked against the layout the launch asked for (the
 * cluster's name and the ranks per host, in {@value #CLUSTER_ENV} and {@value #SLOTS_ENV}; ranks
 * fill host 0 first): every rank runs on its host, node-local ranks and sizes, communicators split
 * by host and across hosts, and {@code /tmp} private to each host.
 */
public class ClusterSuite implements ScenarioSuite {
    /** The cluster's name, set by the launching test. */
    static final String CLUSTER_ENV = "MN4J_TEST_CLUSTER";
    /** Ranks per host, "2,1", set by the launching test. */
    static final String SLOTS_ENV = "MN4J_TEST_SLOTS";

    /** The environment that tells the ranks the layout of a launch. */
    static Map<String, String> env(SimulatedCluster cluster, int[] slots) {
        return Map.of(CLUSTER_ENV, cluster.name(), SLOTS_ENV, Arrays.stream(slots).mapToObj(String::valueOf).collect(Collectors.joining(",")));
    }

    private static int[] slots() {
        return Arrays.stream(System.getenv(SLOTS_ENV).split(",")).mapToInt(Integer::parseInt).toArray();
    }

    /** The host of every rank by the layout: ranks fill host 0's slots, then host 1's, and so on. */
    private static int[] hostOfRank(int[] slots) {
        return IntStream.range(0, slots.length).flatMap(h -> IntStream.range(0, slots[h]).map(i -> h)).toArray();
    }

    /** Rank r's position among its host's ranks. */
    private static int position(int[] slots, int r) {
        return r - Arrays.stream(slots).limit(hostOfRank(slots)[r]).sum();
    }

    private static void onTheirHosts(Communicator c, Check check) throws Exception {
        int host = hostOfRank(slots())[c.rank()];
        String expected = System.getenv(CLUSTER_ENV) + "-h" + host;
        check.equal("MPI's processor name", expected, MPI.getProcessorName());
        check.equal("the kernel's host name", expected, Files.readString(Path.of("/proc/sys/kernel/hostname")).strip());
        check.equal("every host's ranks", Arrays.stream(hostOfRank(slots())).mapToObj(h -> System.getenv(CLUSTER_ENV) + "-h" + h).toList(),
                c.allgatherObj(MPI.getProcessorName()));
    }

    private static void nodeRanks(Communicator c, Check check) {
        int[] slots = slots();
        int host = hostOfRank(slots)[c.rank()];
        check.equal("intraSize: the ranks on this host", slots[host], c.intraSize());
        check.equal("intraRank: the position on this host", position(slots, c.rank()), c.intraRank());
        check.equal("interRank: this host's number", host, c.interRank());
        check.equal("interSize: the number of hosts", slots.length, c.interSize());
    }

    /** One communicator per host: shared memory only inside it. */
    private static void splitByHost(Communicator c, Check check) {
        int[] slots = slots();
        int[] hostOf = hostOfRank(slots);
        int host = hostOf[c.rank()];
        List<Integer> members = IntStream.range(0, c.size()).filter(r -> hostOf[r] == host).boxed().toList();
        try (Communicator sub = c.split(host, c.rank())) {
            check.equal("size", members.size(), sub.size());
            check.equal("rank", members.indexOf(c.rank()), sub.rank());
            check.equal("all on one host: intraSize", sub.size(), sub.intraSize());
            check.equal("all on one host: interSize", 1, sub.interSize());
            check.equal("members in rank order", members, sub.allgatherObj(c.rank()));
            checkSum(sub, check, members);
        }
    }

    /** One communicator per position on a host (the first rank of every host, ...): TCP only. */
    private static void splitAcrossHosts(Communicator c, Check check) {
        int[] slots = slots();
        int mine = position(slots, c.rank());
        List<Integer> members = IntStream.range(0, c.size()).filter(r -> position(slots, r) == mine).boxed().toList();
        try (Communicator sub = c.split(mine, c.rank())) {
            check.equal("members: one per host", members, sub.allgatherObj(c.rank()));
            check.equal("one rank per host: intraSize", 1, sub.intraSize());
            check.equal("one rank per host: interSize", sub.size(), sub.interSize());
            checkSum(sub, check, members);
        }
    }

    private static void checkSum(Communicator sub, Check check, List<Integer> worldRanks) {
        Tensor mine = torch.full(new long[] {3}, new Scalar((double) worldRanks.get(sub.rank())));
        double expected = worldRanks.stream().mapToInt(Integer::intValue).sum();
        check.tensorsClose("allreduce of world ranks", torch.full(new long[] {3}, new Scalar(expected)), sub.allreduce(mine, ReduceOp.SUM), 0);
    }

    /** Each rank writes into /tmp: it sees its host's files, never another host's. */
    private static void privateTmp(Communicator c, Check check) throws IOException {
        String job = c.bcastObj(c.rank() == 0 ? UUID.randomUUID().toString() : null, 0);
        Path dir = Files.createDirectories(Path.of("/tmp", "mn4j-cluster-suite-" + job));
        Files.writeString(dir.resolve("rank-" + c.rank()), String.valueOf(c.rank()));
        c.barrier();
        int[] hostOf = hostOfRank(slots());
        List<String> expected = IntStream.range(0, c.size()).filter(r -> hostOf[r] == hostOf[c.rank()]).mapToObj(r -> "rank-" + r).toList();
        List<String> seen;
        try (Stream<Path> files = Files.list(dir)) {
            seen = files.map(p -> p.getFileName().toString()).sorted().toList();
        }
        check.equal("files in /tmp: this host's ranks' only", expected, seen);
        c.barrier();
        Files.delete(dir.resolve("rank-" + c.rank()));
        c.barrier();
        Files.deleteIfExists(dir);
    }

    /**
     * Rank 0 starts sending 32 MiB to the first rank of host 1, then computes for 4 s without
     * entering MPI. Over TCP the message moves only while the sender is inside MPI, unless mn4j's
     * transfer progress thread is: the receiver must have it well before the sender waits.
     */
    private static void sendMovesWhileSenderComputes(Communicator c, Check check) {
        int receiver = slots()[0]; // the first rank of host 1
        long computeMillis = 4000;
        c.barrier();
        if (c.rank() == 0) {
            SendHandle send = c.isend(torch.ones(8L << 20), receiver, 77);
            long until = System.nanoTime() + computeMillis * 1_000_000;
            double busy = 0;
            while (System.nanoTime() < until) {
                busy += Math.sqrt(busy + 1); // a rank computing: no MPI call
            }
            send.waitFor();
            check.isTrue("computed", busy > 0, "");
        } else if (c.rank() == receiver) {
            long t0 = System.nanoTime();
            RecvHandle r = c.irecv(0, 77);
            Tensor got = r.waitFor();
            double seconds = (System.nanoTime() - t0) / 1e9;
            check.equal("all 32 MiB", 8L << 20, got.numel());
            check.isTrue("arrived while the sender computed", seconds < computeMillis / 2000.0,
                    "took " + seconds + " s of the sender's " + computeMillis / 1000.0 + " s without MPI calls");
        }
        c.barrier();
    }

    /**
     * Rank 0 starts sending 256 MiB to the first rank of host 1, which has posted its receive, and
     * then sends it a small message on another tag. Over one TCP connection in order, a payload
     * posted whole would make the small message (or a collective's) wait until all of it had
     * crossed; paced, it waits for a few pieces, and most of the payload is still on its way when
     * the small message is in.
     */
    private static void messageOvertakesPacedSend(Communicator c, Check check) {
        int receiver = slots()[0];
        long floats = 64L << 20;
        RecvHandle r = c.rank() == receiver ? c.irecv(0, 78) : null;
        c.barrier();
        if (c.rank() == 0) {
            SendHandle send = c.isend(torch.full(new long[] {floats}, new Scalar(3.0f)), receiver, 78);
            c.send(torch.ones(1), receiver, 80);
            send.waitFor();
        } else if (r != null) {
            check.equal("the small message", 1.0, c.recv(0, 80).item().toDouble());
            check.isTrue("the small message came before the 256 MiB had arrived", !r.test(),
                    "the receive was complete when the small message came: it waited behind the payload");
            checkFilled(check, "the 256 MiB", r.waitFor(), floats, 3);
        }
        c.barrier();
    }

    /**
     * Paced sends on one peer and tag keep their order: the second is posted before the first has
     * posted all its pieces, and a blocking send follows both.
     */
    private static void pacedSendsKeepTheirOrder(Communicator c, Check check) {
        int receiver = slots()[0];
        long floats = 16L << 20;
        if (c.rank() == 0) {
            SendHandle a = c.isend(torch.full(new long[] {floats}, new Scalar(1.0f)), receiver, 79);
            SendHandle b = c.isend(torch.full(new long[] {floats + 1}, new Scalar(2.0f)), receiver, 79);
            c.send(torch.full(new long[] {3L << 20}, new Scalar(3.0f)), receiver, 79);
            a.waitFor();
            b.waitFor();
        } else if (c.rank() == receiver) {
            RecvHandle a = c.irecv(0, 79);
            RecvHandle b = c.irecv(0, 79);
            Tensor third = c.recv(0, 79);
            checkFilled(check, "the first", a.waitFor(), floats, 1);
            checkFilled(check, "the second", b.waitFor(), floats + 1, 2);
            checkFilled(check, "the third", third, 3L << 20, 3);
        }
        c.barrier();
    }

    private static void checkFilled(Check check, String what, Tensor got, long numel, double value) {
        check.equal(what + ": elements", numel, got.numel());
        check.equal(what + ": smallest value", value, got.min().item().toDouble());
        check.equal(what + ": largest value", value, got.max().item().toDouble());
    }

    @Override
    public Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = new LinkedHashMap<>();
        s.put("a nonblocking send moves while its sender computes", ClusterSuite::sendMovesWhileSenderComputes);
        s.put("a later message need not wait behind a paced send", ClusterSuite::messageOvertakesPacedSend);
        s.put("paced sends on one peer and tag keep their order", ClusterSuite::pacedSendsKeepTheirOrder);
        s.put("every rank on the host the layout gives it", ClusterSuite::onTheirHosts);
        s.put("intraRank, intraSize, interRank, interSize", ClusterSuite::nodeRanks);
        s.put("split by host", ClusterSuite::splitByHost);
        s.put("split across hosts", ClusterSuite::splitAcrossHosts);
        s.put("/tmp is private to each host", ClusterSuite::privateTmp);
        return s;
    }

    /**
     * This suite and the one-host suites of the Communicator and the differentiable functions in one
     * launch (a JVM with LibTorch per rank costs seconds), their scenarios named after their suite.
     * The wrap of gradient tags ({@code GradientTagsSuite}) stays in the one-host suite: it tests the
     * functions' bookkeeping, not the transport.
     */
    public static class All implements ScenarioSuite {
        @Override
        public Map<String, Scenario> scenarios() {
            Map<String, Scenario> all = new LinkedHashMap<>();
            for (ScenarioSuite suite : List.of(new ClusterSuite(), new P2pSuite(), new CollectiveSuite(), new GroupSuite(),
                    new TensorExchangeSuite(), new FunctionsSuite(), new ModelSuite(), new GradReductionSuite())) {
                suite.scenarios().forEach((name, scenario) -> all.put(suite.getClass().getSimpleName() + ": " + name, scenario));
            }
            return all;
        }
    }
}
