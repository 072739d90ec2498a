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
 * bandwidth, one line per mode, and the same relative to one-shot's median in the same launch
 * (which cancels most of a shared machine's drift). Links are read from their labels
 * ({@code 1gbit}, {@code 2500mbit}, ...); an unshaped link is drawn at {@code --unshaped-gbit}.
 */
@Command(name = "gnn-network-plot", mixinStandardHelpOptions = true,
        description = "Plot GNN epoch time against link bandwidth per mode from gnn-network.csv.")
public final class GnnNetworkPlot implements Callable<Integer> {
    @Option(names = "--csv", required = true, description = "gnn-network.csv written by GnnNetworkBenchmark.")
    private Path csv;

    @Option(names = "--png", required = true, description = "PNG to write.")
    private Path png;

    @Option(names = "--unshaped-gbit", defaultValue = "16", description = "Where to draw the unshaped link, Gbit/s: right of the "
            + "shaped ones (it measured about 8 on this VM; default: ${DEFAULT-VALUE}).")
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
        String axis = "link bandwidth, Gbit/s (unshaped drawn at " + unshapedGbit + ")";
        XYChart seconds = chart("GNN epoch time against link bandwidth (2 hosts x 1 rank)", axis, "median epoch, s");
        XYChart relative = chart("The same, relative to one-shot in the same launch", axis, "median epoch / one-shot's");
        TreeMap<Double, List<Double>> oneShot = modes.get("one-shot");
        for (Map.Entry<String, TreeMap<Double, List<Double>>> m : modes.entrySet()) {
            double[] x = m.getValue().keySet().stream().mapToDouble(Double::doubleValue).toArray();
            double[] y = m.getValue().values().stream().mapToDouble(GnnNetworkPlot::median).toArray();
            seconds.addSeries(m.getKey(), x, y).setMarker(SeriesMarkers.CIRCLE);
            if (oneShot != null) {
                double[] r = new double[x.length];
                for (int i = 0; i < x.length; i++) {
                    r[i] = y[i] / median(oneShot.getOrDefault(x[i], List.of(Double.NaN)));
                }
                relative.addSeries(m.getKey(), x, r).setMarker(SeriesMarkers.CIRCLE);
            }
        }
        BitmapEncoder.saveBitmap(List.of(seconds, relative), 1, 2, png.toString(), BitmapEncoder.BitmapFormat.PNG);
        return 0;
    }

    private static XYChart chart(String title, String xTitle, String yTitle) {
        XYChart c = new XYChartBuilder().width(760).height(480).title(title).xAxisTitle(xTitle).yAxisTitle(yTitle).build();
        c.getStyler().setXAxisLogarithmic(true).setYAxisMin(0.0);
        return c;
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
