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
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Draws {@code bench/data-parallel.sh}'s CSV: per gradient reduction (route and dtype) the bytes
 * host 1's link carried per epoch (each way) and the epoch time, one bar per link setting.
 */
@Command(name = "data-parallel-plot", mixinStandardHelpOptions = true,
        description = "Plot bytes per host link and epoch time per gradient reduction from data-parallel.csv.")
public final class DataParallelPlot implements Callable<Integer> {
    @Option(names = "--csv", required = true, description = "data-parallel.csv written by bench/data-parallel.sh.")
    private Path csv;

    @Option(names = "--png", required = true, description = "PNG to write.")
    private Path png;

    public static void main(String[] args) {
        System.exit(new CommandLine(new DataParallelPlot()).execute(args));
    }

    @Override
    public Integer call() throws IOException {
        // link -> variant -> {MB sent per epoch, epoch seconds}, the first round of each
        Map<String, Map<String, double[]>> links = new LinkedHashMap<>();
        List<String> lines = Files.readAllLines(csv);
        for (String line : lines.subList(1, lines.size())) {
            String[] f = line.split(",");
            links.computeIfAbsent(f[0], k -> new LinkedHashMap<>())
                    .putIfAbsent(f[1], new double[] {Double.parseDouble(f[4]) / 1e6, Double.parseDouble(f[3])});
        }
        CategoryChart bytes = chart("Bytes per epoch on a host's link, each way (2 hosts x 2 ranks)", "MB per epoch");
        CategoryChart seconds = chart("Epoch time", "s");
        for (Map.Entry<String, Map<String, double[]>> l : links.entrySet()) {
            List<String> variants = new ArrayList<>(l.getValue().keySet());
            bytes.addSeries(l.getKey(), variants, l.getValue().values().stream().map(v -> v[0]).toList());
            seconds.addSeries(l.getKey(), variants, l.getValue().values().stream().map(v -> v[1]).toList());
        }
        BitmapEncoder.saveBitmap(List.of(bytes, seconds), 1, 2, png.toString(), BitmapEncoder.BitmapFormat.PNG);
        return 0;
    }

    private static CategoryChart chart(String title, String yTitle) {
        CategoryChart c = new CategoryChartBuilder().width(760).height(480).title(title).xAxisTitle("gradient reduction")
                .yAxisTitle(yTitle).build();
        c.getStyler().setYAxisMin(0.0);
        return c;
    }
}
