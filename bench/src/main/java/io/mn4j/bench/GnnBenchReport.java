package io.mn4j.bench;

import io.mn4j.gnn.partition.PartitionMetadata;
import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.markers.SeriesMarkers;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The records of {@link GnnMemoryBenchmark} (what each rank measured, one CSV row per
 * configuration) and its {@code report} step: the table, the targets of issue 6 and the plot.
 */
@Command(name = "report", mixinStandardHelpOptions = true,
        description = "Print the table and the targets from the CSV and draw memory and time per rank count.")
final class GnnBenchReport implements Callable<Integer> {
    private static final double MIB = 1024.0 * 1024.0;

    @Option(names = "--csv", required = true, description = "CSV written by the 'run' steps.")
    Path csv;

    @Option(names = "--png", description = "PNG to draw (memory per rank and epoch time against ranks).")
    Path png;

    /** What one rank measured (bytes above its own baseline, seconds). */
    record RankReport(int rank, long baseline, long data, long loadPeak, long[] fwdPeak, long[] afterForward, long[] bwdPeak, long[] endRss, long peak,
            double[] seconds, long haloRows, long nodes, long edges, long heapPeak, boolean exactPhases) implements Serializable {
    }

    /** One configuration: maxima (and a mean) over ranks; memory in MiB above the baseline. */
    record Row(String model, String mode, int ranks, int threads, long nodes, long edges, long features, long hidden, int layers,
            int heads, String partitioner, double edgeCutPct, long haloRowsMax, String scope, double baselineMib, double dataMib,
            double loadPeakMib, double fwdPeakMib, double afterForwardMib, double bwdPeakMib, double peakMib, double peakMeanMib, double firstEpochS,
            double secondEpochS, double bestEpochS, int epochs, double firstLoss, double lastLoss, double heapPeakMib) {

        static final String HEADER = "model,mode,ranks,threads,nodes,edges,features,hidden,layers,heads,partitioner,edge_cut_pct,"
                + "halo_rows_max,scope,baseline_mib,data_mib,load_peak_mib,fwd_peak_mib,after_fwd_mib,bwd_peak_mib,peak_mib,peak_mean_mib,"
                + "epoch_first_s,epoch_second_s,epoch_best_s,epochs,loss_first,loss_last,jvm_heap_peak_mib";

        static Row of(String model, String mode, int ranks, int threads, PartitionMetadata m, GnnMemoryBenchmark.RunStep o,
                List<RankReport> all, double[] losses) {
            int last = losses.length - 1;
            double baseline = 0, data = 0, load = 0, fwd = 0, held = 0, bwd = 0, peak = 0, peakSum = 0, heap = 0;
            // An epoch's time is that of its slowest rank.
            double[] epochS = new double[losses.length];
            long halo = 0;
            for (RankReport r : all) {
                baseline = Math.max(baseline, r.baseline() / MIB);
                data = Math.max(data, r.data() / MIB);
                load = Math.max(load, r.loadPeak() / MIB);
                fwd = Math.max(fwd, r.fwdPeak()[last] / MIB);
                held = Math.max(held, r.afterForward()[last] / MIB);
                bwd = Math.max(bwd, r.bwdPeak()[last] / MIB);
                peak = Math.max(peak, r.peak() / MIB);
                peakSum += r.peak() / MIB;
                for (int e = 0; e < epochS.length; e++) {
                    epochS[e] = Math.max(epochS[e], r.seconds()[e]);
                }
                heap = Math.max(heap, r.heapPeak() / MIB);
                halo = Math.max(halo, r.haloRows());
            }
            return new Row(model, mode, ranks, threads, m.numNodes(), m.numEdges(), m.featureSize(), o.hidden, o.layers,
                    model.equals("gat") ? o.heads : 0, m.method(), 100.0 * m.edgeCut() / Math.max(1, m.numEdges()), halo, o.scope,
                    baseline, data, load, fwd, held, bwd, peak, peakSum / all.size(), epochS[0], epochS.length > 1 ? epochS[1] : Double.NaN,
                    best(epochS), epochS.length, losses[0], losses[last], heap);
        }

        /** The fastest epoch after the first (the first builds caches), or the first if it is alone. */
        private static double best(double[] epochS) {
            double b = Double.POSITIVE_INFINITY;
            for (int e = 1; e < epochS.length; e++) {
                b = Math.min(b, epochS[e]);
            }
            return epochS.length > 1 ? b : epochS[0];
        }

        String toCsv() {
            return String.join(",", model, mode, i(ranks), i(threads), i(nodes), i(edges), i(features), i(hidden), i(layers), i(heads),
                    partitioner, f(edgeCutPct), i(haloRowsMax), scope, f(baselineMib), f(dataMib), f(loadPeakMib), f(fwdPeakMib),
                    f(afterForwardMib), f(bwdPeakMib), f(peakMib), f(peakMeanMib), f(firstEpochS), f(secondEpochS), f(bestEpochS), i(epochs), String.format(Locale.ROOT, "%.8f", firstLoss),
                    String.format(Locale.ROOT, "%.8f", lastLoss), f(heapPeakMib));
        }

        static Row parse(String line) {
            String[] c = line.split(",", -1);
            if (c.length != HEADER.split(",").length) {
                throw new IllegalArgumentException("CSV row has " + c.length + " fields, expected " + HEADER.split(",").length + ": " + line);
            }
            int k = 0;
            return new Row(c[k++], c[k++], Integer.parseInt(c[k++]), Integer.parseInt(c[k++]), Long.parseLong(c[k++]), Long.parseLong(c[k++]),
                    Long.parseLong(c[k++]), Long.parseLong(c[k++]), Integer.parseInt(c[k++]), Integer.parseInt(c[k++]), c[k++],
                    Double.parseDouble(c[k++]), Long.parseLong(c[k++]), c[k++], Double.parseDouble(c[k++]), Double.parseDouble(c[k++]),
                    Double.parseDouble(c[k++]), Double.parseDouble(c[k++]), Double.parseDouble(c[k++]), Double.parseDouble(c[k++]),
                    Double.parseDouble(c[k++]), Double.parseDouble(c[k++]), Double.parseDouble(c[k++]), Double.parseDouble(c[k++]),
                    Double.parseDouble(c[k++]), Integer.parseInt(c[k++]), Double.parseDouble(c[k++]),
                    Double.parseDouble(c[k++]), Double.parseDouble(c[k++]));
        }

        void append(Path file) throws IOException {
            if (file.getParent() != null) {
                Files.createDirectories(file.getParent());
            }
            boolean fresh = !Files.exists(file) || Files.size(file) == 0;
            Files.writeString(file, (fresh ? HEADER + "\n" : "") + toCsv() + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                    StandardOpenOption.APPEND);
        }

        /** A few lines for the log of one run: the row and each rank's figures. */
        String describe(List<RankReport> all) {
            StringBuilder b = new StringBuilder(String.format(Locale.ROOT,
                    "%s %s, %d ranks x %d threads: peak %.0f MiB/rank above baseline (data %.0f, load peak %.0f, last epoch"
                            + " forward peak %.0f, held after forward %.0f, backward peak %.0f), epochs %.2f s then %.2f s (best"
                            + " after the first %.2f s), loss %.6f then %.6f",
                    model, mode, ranks, threads, peakMib, dataMib, loadPeakMib, fwdPeakMib,
                    afterForwardMib, bwdPeakMib, firstEpochS, secondEpochS, bestEpochS, firstLoss, lastLoss));
            for (RankReport r : all) {
                b.append(String.format(Locale.ROOT, "%n  rank %d: %d nodes, %d edges, %d halo rows; baseline %.0f MiB; data %.0f;"
                                + " peak %.0f; after each epoch %s MiB; Java heap pools' peak use %.0f MiB%s", r.rank(), r.nodes(), r.edges(),
                        r.haloRows(), r.baseline() / MIB, r.data() / MIB, r.peak() / MIB, mibList(r.endRss()), r.heapPeak() / MIB,
                        r.exactPhases() ? "" : " (VmHWM could not be reset: peaks are since process start)"));
            }
            return b.toString();
        }

        String key() {
            return model + "/" + mode + "/" + ranks;
        }
    }

    private static String mibList(long[] bytes) {
        StringBuilder b = new StringBuilder();
        for (long v : bytes) {
            b.append(b.length() == 0 ? "" : ", ").append(Math.round(v / MIB));
        }
        return b.toString();
    }

    private static String i(long v) {
        return Long.toString(v);
    }

    private static String f(double v) {
        return String.format(Locale.ROOT, "%.3f", v);
    }

    // ------------------------------------------------------------------------------------------

    /**
     * One configuration over its runs: memory and the second epoch's time from the first run (the
     * matrix); the best epoch time (after the first epoch) over all runs, since load from other
     * processes only ever adds time.
     */
    record Config(Row first, double bestS, int runs) {
        String model() {
            return first.model();
        }

        String mode() {
            return first.mode();
        }

        int ranks() {
            return first.ranks();
        }

        double peakMib() {
            return first.peakMib();
        }
    }

    @Override
    public Integer call() throws IOException {
        Map<String, List<Row>> byKey = new LinkedHashMap<>();
        for (String line : Files.readAllLines(csv, StandardCharsets.UTF_8)) {
            if (line.isBlank() || line.startsWith("model,")) {
                continue;
            }
            Row r = Row.parse(line);
            byKey.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r);
        }
        if (byKey.isEmpty()) {
            System.err.println("no rows in " + csv);
            return 1;
        }
        List<Config> configs = new ArrayList<>();
        for (List<Row> runs : byKey.values()) {
            configs.add(new Config(runs.get(0), runs.stream().mapToDouble(Row::bestEpochS).min().getAsDouble(), runs.size()));
        }
        configs.sort(Comparator.comparing(Config::model).thenComparing(c -> GnnMemoryBenchmark.modeNumber(c.mode()))
                .thenComparing(Config::ranks));
        printTable(configs);
        int[] targets = printTargets(configs);
        if (png != null) {
            plot(configs, png);
            System.out.println("plot: " + png);
        }
        System.out.println(targets[0] == 0 ? "no target measured (they need GCN and GAT in modes 1 and 2)"
                : targets[1] == 0 ? "all targets met" : "some targets NOT met (see above)");
        return 0;
    }

    private static Config find(List<Config> configs, String model, String mode, int ranks) {
        for (Config c : configs) {
            if (c.model().equals(model) && c.mode().equals(mode) && c.ranks() == ranks) {
                return c;
            }
        }
        return null;
    }

    private static void printTable(List<Config> configs) {
        Row any = configs.get(0).first();
        System.out.printf(Locale.ROOT, "graph: %d nodes, %d edges, %d features; %d layers of %d%s; partitioner %s; scope per %s%n",
                any.nodes(), any.edges(), any.features(), any.layers(), any.hidden(),
                configs.stream().anyMatch(c -> c.first().heads() > 0)
                        ? " (GAT: " + configs.stream().mapToInt(c -> c.first().heads()).max().getAsInt() + " heads)" : "",
                any.partitioner(), any.scope());
        System.out.println("memory: MiB per rank above the idle baseline (JVM + LibTorch + MPI), maximum over ranks;"
                + " xM(1)/N = peak / (same model and mode at 1 rank / N)");
        System.out.println("data = resident after loading the partition and building shards and model; held = resident after"
                + " the forward pass; halo = rows a rank receives per exchange (max over ranks)");
        System.out.println("time: epoch = forward + backward + gradient sum + Adam step, slowest rank; 'epoch 2' from the first"
                + " run, 'best' = fastest epoch after the first over all runs");
        if (configs.stream().anyMatch(c -> c.mode().equals("sampled"))) {
            System.out.println("sampled: an epoch is one pass over every rank's training nodes in mini-batches (sample, fetch"
                    + " features, forward, backward, gradient sum, Adam step per batch); its peak shows under bwdpk");
        }
        System.out.printf("%-5s %-12s %2s %3s %5s %7s %6s %7s %7s %7s %7s %7s %8s %8s %4s %11s%n", "model", "mode", "N", "thr", "cut%",
                "halo", "data", "fwdpk", "held", "bwdpk", "peak", "xM(1)/N", "epoch 2", "best", "runs", "loss 2");
        for (Config c : configs) {
            Row r = c.first();
            Config one = find(configs, r.model(), r.mode(), 1);
            String ratio = one == null ? "-" : String.format(Locale.ROOT, "%.2f", r.peakMib() / (one.peakMib() / r.ranks()));
            System.out.printf(Locale.ROOT, "%-5s %-12s %2d %3d %5.1f %7d %6.0f %7.0f %7.0f %7.0f %7.0f %7s %7.2fs %7.2fs %4d %11.7f%n",
                    r.model(), r.mode(), r.ranks(), r.threads(), r.edgeCutPct(),
                    r.haloRowsMax(), r.dataMib(), r.fwdPeakMib(), r.afterForwardMib(), r.bwdPeakMib(), r.peakMib(), ratio,
                    r.secondEpochS(), c.bestS(), c.runs(), r.lastLoss());
        }
    }

    /** Prints the targets; returns how many were measured and how many of those failed. */
    private static int[] printTargets(List<Config> configs) {
        int measured = 0, failed = 0;
        System.out.println();
        System.out.println("targets (issue 6):");
        for (String model : List.of("gcn", "gat")) {
            Config one = find(configs, model, "sar", 1);
            for (int n : new int[] {2, 4}) {
                Config r = find(configs, model, "sar", n);
                if (one == null || r == null) {
                    System.out.printf("  [ -- ] %s SAR, %d ranks: memory(%d) <= 1.25 x memory(1)/%d: not measured%n", model, n, n, n);
                    continue;
                }
                double bound = 1.25 * one.peakMib() / n;
                boolean pass = r.peakMib() <= bound;
                measured++;
                failed += pass ? 0 : 1;
                System.out.printf(Locale.ROOT, "  [%s] %s SAR, %d ranks: %.0f MiB <= 1.25 x %.0f/%d = %.0f MiB (%.2f x memory(1)/%d)%n",
                        pass ? "PASS" : "FAIL", model, n, r.peakMib(), one.peakMib(), n, bound, r.peakMib() / (one.peakMib() / n), n);
            }
        }
        Config sar = find(configs, "gat", "sar", 4), seq = find(configs, "gat", "sequential", 4);
        if (sar != null && seq != null) {
            boolean pass = seq.peakMib() >= 2 * sar.peakMib();
            measured++;
            failed += pass ? 0 : 1;
            System.out.printf(Locale.ROOT, "  [%s] gat, 4 ranks: SEQUENTIAL / SAR memory = %.0f / %.0f = %.2f >= 2%n", pass ? "PASS" : "FAIL",
                    seq.peakMib(), sar.peakMib(), seq.peakMib() / sar.peakMib());
        } else {
            System.out.println("  [ -- ] gat, 4 ranks: SEQUENTIAL / SAR memory >= 2: not measured");
        }
        for (int n : new int[] {1, 2, 4}) {
            Config m1 = find(configs, "gcn", "sar", n), m3 = find(configs, "gcn", "one-shot", n);
            if (m1 == null || m3 == null) {
                continue;
            }
            String note = n == 1 ? " (one rank: no remote shards, same code path)"
                    : n > 2 ? " (oversubscribed: " + n + " ranks on 2 cores, not a speed measurement)" : " (one rank per core)";
            double second = m1.first().secondEpochS() / m3.first().secondEpochS();
            double best = m1.bestS() / m3.bestS();
            boolean pass = best <= 1.3;
            if (n == 2) {
                measured++;
                failed += pass ? 0 : 1;
            }
            System.out.printf(Locale.ROOT, "  [%s] gcn, %d ranks: SAR / ONE_SHOT epoch time, best of %d and %d runs = %.2f / %.2f s = %.2f"
                            + " <= 1.3 (second epoch of the first run: %.2f / %.2f s = %.2f)%s%n",
                    n == 2 ? (pass ? "PASS" : "FAIL") : (pass ? "pass" : "fail"), n, m1.runs(), m3.runs(), m1.bestS(), m3.bestS(), best,
                    m1.first().secondEpochS(), m3.first().secondEpochS(), second, note);
        }
        return new int[] {measured, failed};
    }

    private static void plot(List<Config> configs, Path png) throws IOException {
        Row any = configs.get(0).first();
        XYChart mem = new XYChartBuilder().width(720).height(480)
                .title(String.format(Locale.ROOT, "Peak memory per rank (%dk nodes, deg %.0f, %d feat, %dx%d)", any.nodes() / 1000,
                        (double) any.edges() / any.nodes(), any.features(), any.layers(), any.hidden()))
                .xAxisTitle("workers (ranks)").yAxisTitle("MiB above idle baseline").build();
        XYChart time = new XYChartBuilder().width(720).height(480).title("Best epoch time (2 cores: N=4 is oversubscribed)")
                .xAxisTitle("workers (ranks)").yAxisTitle("seconds").build();
        Color[] colors = {new Color(31, 119, 180), new Color(255, 127, 14), new Color(44, 160, 44), new Color(214, 39, 40),
            new Color(148, 103, 189)};
        for (String model : List.of("gcn", "gat", "sage")) {
            for (String mode : List.of("sar", "sequential", "one-shot", "pipelined", "sampled")) {
                List<Config> line = new ArrayList<>();
                for (Config c : configs) {
                    if (c.model().equals(model) && c.mode().equals(mode)) {
                        line.add(c);
                    }
                }
                if (line.isEmpty()) {
                    continue;
                }
                double[] x = line.stream().mapToDouble(Config::ranks).toArray();
                String name = model.toUpperCase(Locale.ROOT) + " " + mode;
                Color c = colors[GnnMemoryBenchmark.modeNumber(mode) - 1];
                style(mem.addSeries(name, x, line.stream().mapToDouble(Config::peakMib).toArray()), c, model.equals("gat"));
                style(time.addSeries(name, x, line.stream().mapToDouble(Config::bestS).toArray()), c, model.equals("gat"));
            }
            Config one = find(configs, model, "sar", 1);
            if (one != null) {
                double[] x = {1, 2, 4};
                double[] y = {one.peakMib() * 1.25, one.peakMib() * 1.25 / 2, one.peakMib() * 1.25 / 4};
                XYSeries s = mem.addSeries(model.toUpperCase(Locale.ROOT) + " target 1.25 x M1(1)/N", x, y);
                s.setMarker(SeriesMarkers.NONE);
                s.setLineColor(Color.GRAY);
                s.setLineStyle(new BasicStroke(1f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f,
                        model.equals("gat") ? new float[] {2f, 4f} : new float[] {8f, 4f}, 0f));
            }
        }
        mem.getStyler().setXAxisDecimalPattern("#").setYAxisMin(0.0);
        time.getStyler().setXAxisDecimalPattern("#").setYAxisMin(0.0);
        if (png.getParent() != null) {
            Files.createDirectories(png.getParent());
        }
        BitmapEncoder.saveBitmap(List.of(mem, time), 1, 2, png.toString(), BitmapEncoder.BitmapFormat.PNG);
    }

    private static void style(XYSeries s, Color c, boolean gat) {
        s.setLineColor(c);
        s.setMarkerColor(c);
        s.setMarker(gat ? SeriesMarkers.DIAMOND : SeriesMarkers.CIRCLE);
        s.setLineStyle(gat ? new BasicStroke(2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 3f}, 0f)
                : new BasicStroke(2f));
    }
}
