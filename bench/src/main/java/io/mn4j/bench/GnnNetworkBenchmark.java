package io.mn4j.bench;

import io.mn4j.communicator.CommStats;
import io.mn4j.communicator.Communicator;
import io.mn4j.gnn.nn.GnnModel;
import io.mn4j.gnn.partition.PartitionData;
import io.mn4j.gnn.partition.PartitionReader;
import io.mn4j.gnn.sampling.DistNeighborSampler;
import io.mn4j.gnn.shard.AggregationMode;
import io.mn4j.gnn.shard.GraphShardManager;
import io.mn4j.gnn.train.FullGraphTrainer;
import io.mn4j.gnn.train.LocalNodes;
import io.mn4j.gnn.train.MiniBatchTrainer;
import io.mn4j.gnn.train.Trainer;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Adam;
import org.bytedeco.pytorch.AdamOptions;
import org.bytedeco.pytorch.global.torch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Epoch time of partitioned GNN training by mode where the network matters (run it on
 * {@code scripts/cluster} with shaped links, {@code bench/gnn-network.sh}): full-graph GCN in
 * SAR, ONE_SHOT and PIPELINED mode (staleness 1 and 2), and SAGE on sampled mini-batches, all in
 * one launch, the modes interleaved round by round so that they see the same phases of a shared
 * machine. Each epoch is split into the time the rank spent in blocking communicator calls
 * (collectives, blocking point to point, posting nonblocking transfers: <em>communication</em>),
 * the time it blocked in {@code waitFor()} of nonblocking transfers (SAR's prefetched blocks,
 * PIPELINED's stale rows: <em>waiting</em>) and the rest (<em>compute</em>). Epochs follow each
 * other without a barrier (one before a mode's first), as in training. Rank 0 appends one CSV row
 * per mode and timed epoch: the slowest rank's epoch time and the mean over the ranks of each part. The partitions are those of {@code GnnMemoryBenchmark partition} ({@code DATA/pN}).
 */
@Command(name = "gnn-network-benchmark", mixinStandardHelpOptions = true,
        description = "GNN epoch time by mode (sar, one-shot, pipelined, pipelined-s2, sampled) with compute, communication and waiting.")
public final class GnnNetworkBenchmark implements Callable<Integer> {
    /** CSV columns, one row per mode and timed epoch. */
    static final String HEADER = "link,mode,round,epoch,seconds,compute_s,communication_s,waiting_s,bytes_sent,loss,load";

    @Option(names = "--data", required = true, description = "Data root written by 'GnnMemoryBenchmark partition' (reads DATA/pN, N = ranks).")
    Path data;

    @Option(names = "--modes", split = ",", defaultValue = "sar,one-shot,pipelined,pipelined-s2,sampled",
            description = "Modes, interleaved every round (default: ${DEFAULT-VALUE}).")
    List<String> modes;

    @Option(names = "--rounds", defaultValue = "2", description = "Rounds over the modes (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--epochs", defaultValue = "3", description = "Timed epochs per mode and round, after one untimed (default: ${DEFAULT-VALUE}).")
    int epochs;

    @Option(names = "--hidden", defaultValue = "128", description = "Hidden width (default: ${DEFAULT-VALUE}).")
    long hidden;

    @Option(names = "--layers", defaultValue = "3", description = "Layers (default: ${DEFAULT-VALUE}).")
    int layers;

    @Option(names = "--fanouts", split = ",", defaultValue = "5,5,5", description = "Sampled mode: neighbours per hop (default: ${DEFAULT-VALUE}).")
    int[] fanouts;

    @Option(names = "--batch-size", defaultValue = "1024", description = "Sampled mode: seeds per rank and batch (default: ${DEFAULT-VALUE}).")
    int batchSize;

    @Option(names = "--link", defaultValue = "one host", description = "Label of the link setting, for the CSV (default: ${DEFAULT-VALUE}).")
    String link;

    @Option(names = "--csv", description = "CSV file rank 0 appends rows to (header written when new).")
    Path csv;

    private Communicator comm;

    public static void main(String[] args) {
        MpiCommand.main(args, world -> {
            GnnNetworkBenchmark b = new GnnNetworkBenchmark();
            b.comm = world;
            return b;
        });
    }

    @Override
    public Integer call() throws IOException {
        PartitionData part = PartitionReader.load(comm, data.resolve(GnnMemoryBenchmark.partitionDir(comm.size())));
        GraphShardManager graph = GraphShardManager.build(comm, part);
        PrintStream out = comm.rank() == 0 ? openCsv() : null;
        if (comm.rank() == 0) {
            System.out.printf(Locale.ROOT, "%s: %d ranks on %d hosts, partition of rank 0: %d nodes, %d in-edges; %d threads per rank%n",
                    link, comm.size(), comm.interSize(), part.numLocalNodes(), part.numLocalEdges(), torch.get_num_threads());
        }
        for (int round = 1; round <= rounds; round++) {
            for (String mode : modes) {
                runMode(graph, part, mode, round, out);
            }
        }
        if (out != null) {
            out.close();
        }
        graph.close();
        part.close();
        return 0;
    }

    private PrintStream openCsv() throws IOException {
        if (csv == null) {
            return null;
        }
        boolean fresh = !Files.exists(csv) || Files.size(csv) == 0;
        PrintStream p = new PrintStream(Files.newOutputStream(csv, StandardOpenOption.CREATE, StandardOpenOption.APPEND),
                true, StandardCharsets.UTF_8);
        if (fresh) {
            p.println(HEADER);
        }
        return p;
    }

    /** One mode's untimed epoch and timed epochs, with a fresh model of the same seed. */
    private void runMode(GraphShardManager graph, PartitionData part, String mode, int round, PrintStream out) {
        boolean sampled = mode.equals("sampled");
        if (!sampled) {
            graph.mode(aggregationMode(mode)).staleness(mode.equals("pipelined-s2") ? 2 : 1);
        }
        torch.manual_seed(1);
        GnnModel model = new GnnModel(sampled ? GnnModel.Kind.SAGE : GnnModel.Kind.GCN, part.features().size(1), hidden,
                part.metadata().numClasses(), layers, 0, 1);
        Adam adam = new Adam(model.parameters(), new AdamOptions(0.01));
        LocalNodes nodes = new LocalNodes(part.features(), part.labels(), part.trainMask(), part.valMask(), part.testMask());
        Trainer trainer = sampled
                ? new MiniBatchTrainer(comm, null, model, adam, nodes,
                        new DistNeighborSampler(comm, part.metadata().partNodeOffsets(), part.adjacency(), fanouts, 1), batchSize, 1)
                : new FullGraphTrainer(comm, graph, model, adam, nodes);
        List<CommStats> stats = List.of(comm.stats(), graph.communicator().stats());
        double[][] figures = new double[epochs + 1][];
        double[] losses = new double[epochs + 1];
        Map<String, Double> opSeconds = new TreeMap<>();
        // One barrier before the mode's first epoch only: a barrier between epochs would let
        // transfers in flight move while a rank waits in it, outside the epochs' time.
        comm.barrier();
        for (int e = 0; e <= epochs; e++) {
            stats.forEach(CommStats::reset);
            long t0 = System.nanoTime();
            double loss;
            try (PointerScope scope = new PointerScope()) {
                loss = trainer.trainEpoch();
            }
            double seconds = (System.nanoTime() - t0) / 1e9;
            double waiting = 0;
            double communication = 0;
            long sent = 0;
            for (CommStats s : stats) { // the world's (gradients, sampling) and the shard manager's (halos)
                Map<String, CommStats.OpStats> ops = s.snapshot();
                double w = ops.containsKey(CommStats.WAIT) ? ops.get(CommStats.WAIT).seconds() : 0;
                waiting += w;
                communication += ops.values().stream().mapToDouble(CommStats.OpStats::seconds).sum() - w;
                sent += s.totalBytesSent();
                if (e == epochs) {
                    ops.forEach((op, o) -> opSeconds.merge(op, o.seconds(), Double::sum));
                }
            }
            figures[e] = new double[] {seconds, seconds - communication - waiting, communication, waiting, sent};
            losses[e] = loss;
        }
        for (int e = 0; e <= epochs; e++) {
            report(out, mode, round, e, figures[e], losses[e]);
        }
        if (comm.rank() == 0) {
            StringBuilder b = new StringBuilder("  rank 0's last epoch, seconds per operation:");
            opSeconds.forEach((op, sec) -> b.append(String.format(Locale.ROOT, " %s %.3f", op, sec)));
            System.out.println(b);
        }
    }

    /** Gathers every rank's figures; rank 0 prints and appends the row of a timed epoch. */
    private void report(PrintStream out, String mode, int round, int epoch, double[] mine, double loss) {
        List<double[]> all = comm.allgatherObj(mine);
        if (comm.rank() != 0) {
            return;
        }
        double slowest = all.stream().mapToDouble(a -> a[0]).max().orElse(0);
        double[] mean = new double[5];
        for (double[] a : all) {
            for (int i = 0; i < 5; i++) {
                mean[i] += a[i] / all.size();
            }
        }
        String load = readLoad();
        System.out.printf(Locale.ROOT, "%-13s round %d epoch %d: %.3f s (compute %.3f, communication %.3f, waiting %.3f; %.1f MB sent per rank)"
                + " loss %.6f%s%n", mode, round, epoch, slowest, mean[1], mean[2], mean[3], mean[4] / 1e6, loss, epoch == 0 ? " (untimed)" : "");
        if (out != null && epoch > 0) {
            out.printf(Locale.ROOT, "%s,%s,%d,%d,%.4f,%.4f,%.4f,%.4f,%.0f,%.6f,%s%n", link, mode, round, epoch, slowest, mean[1], mean[2],
                    mean[3], mean[4], loss, load);
        }
    }

    /** The 1-minute load average, for the CSV (the machine is shared). */
    private static String readLoad() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
        } catch (IOException e) {
            return "";
        }
    }

    private static AggregationMode aggregationMode(String mode) {
        return switch (mode) {
            case "sar" -> AggregationMode.SAR;
            case "one-shot" -> AggregationMode.ONE_SHOT;
            case "pipelined", "pipelined-s2" -> AggregationMode.PIPELINED;
            default -> throw new IllegalArgumentException("unknown mode '" + mode + "' (sar, one-shot, pipelined, pipelined-s2, sampled)");
        };
    }
}
