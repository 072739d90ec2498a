package io.mn4j.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.markers.SeriesMarkers;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine;

/**
 * Draws {@code bench/comm.sh}'s joined CSV: mn4j's bandwidth as a fraction of C's against
 * the message size, point-to-point and collectives side by side, with the 0.9 target from 1 MiB.
 */
@Command(name = "comm-bench-plot", mixinStandardHelpOptions = true,
        description = "Plot Java/C bandwidth ratios from bench/results/comm.csv.")
public final class CommBenchPlot implements Callable<Integer> {
    private static final double TARGET = 0.9;
    private static final double MIB = 1 << 20;

    @Option(names = "--csv", required = true, description = "comm.csv written by bench/comm.sh.")
    private Path csv;

    @Option(names = "--png", required = true, description = "PNG to write.")
    private Path png;

    public static void main(String[] args) {
        System.exit(new CommandLine(new CommBenchPlot()).execute(args));
    }

    @Override
    public Integer call() throws IOException {
        // (op, ranks) -> sizes in bytes and ratios, in file order (sizes ascend within a series).
        Map<String, List<double[]>> series = new LinkedHashMap<>();
        List<String> lines = Files.readAllLines(csv);
        for (String line : lines.subList(1, lines.size())) {
            String[] f = line.split(",");
            if (f.length < 8 || f[0].equals("pingpong_mpijava")) {
                continue;
            }
            String name = f[0] + (f[0].startsWith("pingpong") ? "" : ", " + f[1] + " ranks");
            series.computeIfAbsent(name, k -> new ArrayList<>())
                    .add(new double[] {Long.parseLong(f[2]), Double.parseDouble(f[7])});
        }
        XYChart p2p = chart("Point to point (2 ranks): Java / C bandwidth");
        XYChart coll = chart("Collectives: Java / C bandwidth");
        for (Map.Entry<String, List<double[]>> e : series.entrySet()) {
            XYChart target = e.getKey().startsWith("pingpong") ? p2p : coll;
            double[] x = e.getValue().stream().mapToDouble(p -> p[0]).toArray();
            double[] y = e.getValue().stream().mapToDouble(p -> p[1]).toArray();
            target.addSeries(e.getKey(), x, y).setMarker(SeriesMarkers.CIRCLE);
        }
        for (XYChart c : List.of(p2p, coll)) {
            double maxX = c.getSeriesMap().values().stream().mapToDouble(s -> s.getXMax()).max().orElse(MIB);
            XYSeries t = c.addSeries("target " + TARGET + " from 1 MiB", new double[] {MIB, maxX},
                    new double[] {TARGET, TARGET});
            t.setMarker(SeriesMarkers.NONE);
        }
        BitmapEncoder.saveBitmap(List.of(p2p, coll), 1, 2, png.toString(), BitmapEncoder.BitmapFormat.PNG);
        return 0;
    }

    private static XYChart chart(String title) {
        XYChart c = new XYChartBuilder().width(760).height(480).title(title).xAxisTitle("message size per rank (bytes)")
                .yAxisTitle("Java / C").build();
        c.getStyler().setXAxisLogarithmic(true).setYAxisMin(0.0).setYAxisMax(1.4).setXAxisDecimalPattern("#,###");
        return c;
    }
}
