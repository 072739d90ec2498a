package io.mn4j.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.markers.SeriesMarkers;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Draws {@code bench/gnn-network.sh}'s CSV: the median epoch time of each mode against the link
 * bandwidth, one line per mode. Links are read from their labels ({@code 1gbit},
 * {@code 2500mbit}, ...); an unshaped link is drawn at {@code --unshaped-gbit}, what the
 * simulated cluster's unshaped veth link measured.
 */
@Command(name = "gnn-network-plot", mixinStandardHelpOptions = true,
        description = "Plot GNN epoch time against link bandwidth per mode from gnn-network.csv.")
public final class GnnNetworkPlot implements Callable<Integer> {
    @Option(names = "--csv", required = true, description = "gnn-network.csv written by GnnNetworkBenchmark.")
    private Path csv;

    @Option(names = "--png", required = true, description = "PNG to write.")
    private Path png;

    @Option(names = "--unshaped-gbit", defaultValue = "8", description = "Where to draw the unshaped link, Gbit/s (default: ${DEFAULT-VALUE}).")
    private double unshapedGbit;

    public static void main(String[] args) {
        System.exit(new CommandLine(new GnnNetworkPlot()).execute(args));
    }

    @Override
    public Integer call() throws IOException {
        // mode -> (Gbit/s -> epoch times)
        Map<String, TreeMap<Double, List<Double>>> modes = new LinkedHashMap<>();
        List<String> lines = Files.readAllLines(csv);
        for (String line : lines.subList(1, lines.size())) {
            String[] f = line.split(",");
            modes.computeIfAbsent(f[1], k -> new TreeMap<>()).computeIfAbsent(gbit(f[0]), k -> new ArrayList<>())
                    .add(Double.parseDouble(f[4]));
        }
        XYChart c = new XYChartBuilder().width(860).height(520).title("GNN epoch time against link bandwidth (2 hosts x 1 rank)")
                .xAxisTitle("link bandwidth, Gbit/s (unshaped drawn at " + unshapedGbit + ")").yAxisTitle("median epoch, s").build();
        c.getStyler().setXAxisLogarithmic(true).setYAxisMin(0.0);
        for (Map.Entry<String, TreeMap<Double, List<Double>>> m : modes.entrySet()) {
            double[] x = m.getValue().keySet().stream().mapToDouble(Double::doubleValue).toArray();
            double[] y = m.getValue().values().stream().mapToDouble(GnnNetworkPlot::median).toArray();
            c.addSeries(m.getKey(), x, y).setMarker(SeriesMarkers.CIRCLE);
        }
        BitmapEncoder.saveBitmap(c, png.toString(), BitmapEncoder.BitmapFormat.PNG);
        return 0;
    }

    /** Gbit/s of a link label: 1gbit, 2500mbit, 100mbit; "none" is the unshaped link. */
    private double gbit(String label) {
        String l = label.toLowerCase();
        if (l.endsWith("gbit")) {
            return Double.parseDouble(l.substring(0, l.length() - 4));
        }
        if (l.endsWith("mbit")) {
            return Double.parseDouble(l.substring(0, l.length() - 4)) / 1000;
        }
        return unshapedGbit;
    }

    static double median(List<Double> values) {
        double[] v = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }
}
