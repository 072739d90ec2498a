package io.mn4j.bench;

import io.mn4j.bench.AggregationBenchmark.Result;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToDoubleFunction;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * Draws {@link AggregationBenchmark}'s results: gathered GB/s (a copy's GB/s for the copies)
 * against the width, at the degree measured most often, and against the degree, at the width
 * measured most often; one line per method, node order and direction.
 */
final class AggregationPlot {
    private AggregationPlot() {}

    /** Plots a CSV {@link AggregationBenchmark} wrote: {@code AggregationPlot CSV PNG}. */
    public static void main(String[] args) throws IOException {
        List<Result> results = new ArrayList<>();
        List<String> lines = Files.readAllLines(Path.of(args[0]));
        for (String line : lines.subList(1, lines.size())) {
            String[] f = line.split(",");
            results.add(new Result(Double.parseDouble(f[0]), Integer.parseInt(f[1]), f[2], f[3], f[4], Long.parseLong(f[5]), Long.parseLong(f[6]),
                    Integer.parseInt(f[7]), Double.parseDouble(f[8]), Double.parseDouble(f[9]), Double.parseDouble(f[15])));
        }
        plot(results, Path.of(args[1]));
    }

    /** Writes the charts that have more than one width or degree, side by side, into {@code png}. */
    static void plot(List<Result> results, Path png) throws IOException {
        double degree = mostCommon(results, Result::degree);
        double width = mostCommon(results, r -> r.features());
        XYChart byWidth = chart("GB/s against width (degree " + degree + ")", "width (float32 columns)");
        XYChart byDegree = chart("GB/s against degree (width " + (int) width + ")", "average degree");
        addSeries(byWidth, results.stream().filter(r -> r.degree() == degree).toList(), r -> r.features());
        addSeries(byDegree, results.stream().filter(r -> r.features() == width).toList(), Result::degree);
        List<XYChart> charts = new ArrayList<>();
        for (XYChart c : List.of(byWidth, byDegree)) {
            if (!c.getSeriesMap().isEmpty()) charts.add(c);
        }
        if (charts.isEmpty()) charts.add(byWidth);
        BitmapEncoder.saveBitmap(charts, 1, charts.size(), png.toString(), BitmapEncoder.BitmapFormat.PNG);
    }

    private static void addSeries(XYChart c, List<Result> results, ToDoubleFunction<Result> x) {
        Map<String, List<Result>> series = new LinkedHashMap<>();
        for (Result r : results) {
            String name = r.method() + (r.order().equals("-") ? "" : ", " + r.order()) + (r.direction().equals("copy") ? "" : ", " + r.direction());
            series.computeIfAbsent(name, k -> new ArrayList<>()).add(r);
        }
        for (Map.Entry<String, List<Result>> s : series.entrySet()) {
            List<Result> points = s.getValue().stream().sorted(Comparator.comparingDouble(x)).toList();
            if (points.size() < 2) continue;
            c.addSeries(s.getKey(), points.stream().mapToDouble(x).toArray(), points.stream().mapToDouble(Result::gbPerSecond).toArray())
                    .setMarker(SeriesMarkers.CIRCLE);
        }
    }

    private static double mostCommon(List<Result> results, ToDoubleFunction<Result> key) {
        Map<Double, Integer> count = new LinkedHashMap<>();
        results.forEach(r -> count.merge(key.applyAsDouble(r), 1, Integer::sum));
        return count.entrySet().stream().max(Map.Entry.comparingByValue()).map(Map.Entry::getKey).orElse(0.0);
    }

    private static XYChart chart(String title, String xAxis) {
        XYChart c = new XYChartBuilder().width(760).height(520).title(title).xAxisTitle(xAxis).yAxisTitle("GB/s (gathered rows; copies: bytes copied)")
                .build();
        c.getStyler().setXAxisLogarithmic(true).setYAxisMin(0.0);
        return c;
    }
}
