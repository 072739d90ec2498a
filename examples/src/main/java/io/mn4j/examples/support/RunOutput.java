package io.mn4j.examples.support;

import io.mn4j.iterators.EpochStats;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.markers.Marker;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The files a training run leaves in its output directory: {@code epochs.csv} (one
 * {@link EpochReport} line per epoch, written as the run goes) and {@code curves.png} (loss and
 * accuracy per epoch, training and test).
 *
 * <p>Examples whose epochs carry other numbers use the generic side: {@link #RunOutput(Path,
 * String, String)} with their own CSV header, {@link #addLine} per epoch and
 * {@link #writeCharts} with their own panels.
 */
public final class RunOutput {
    private final Path dir;
    private final String title;
    private final List<EpochStats> epochs = new ArrayList<>();

    /** One chart of {@link #writeCharts}: named series over the same x values. */
    public record Panel(String title, String yAxisTitle, double[] x, Map<String, double[]> series) {
    }

    /** Creates {@code dir} if needed and starts a fresh {@code epochs.csv} (see below). */
    public RunOutput(Path dir, String title) throws IOException {
        this(dir, title, EpochReport.CSV_HEADER);
    }

    /**
     * Creates {@code dir} if needed and starts a fresh {@code epochs.csv} with the given column
     * names. An earlier run's plot is removed, so that a run that dies leaves no plot of another run
     * beside its own CSV.
     */
    public RunOutput(Path dir, String title, String csvHeader) throws IOException {
        this.dir = dir;
        this.title = title;
        Files.createDirectories(dir);
        Files.deleteIfExists(png());
        Files.writeString(csv(), csvHeader + "\n", StandardCharsets.UTF_8);
    }

    /** The title given at creation. */
    public String title() {
        return title;
    }

    /** The CSV file. */
    public Path csv() {
        return dir.resolve("epochs.csv");
    }

    /** The PNG file. */
    public Path png() {
        return dir.resolve("curves.png");
    }

    /** Appends one epoch to the CSV. */
    public void add(EpochReport r) throws IOException {
        epochs.add(r.stats());
        addLine(r.csvLine());
    }

    /** Appends one line (without its line break) to the CSV. */
    public void addLine(String csvLine) throws IOException {
        Files.writeString(csv(), csvLine + "\n", StandardCharsets.UTF_8, StandardOpenOption.APPEND);
    }

    /** Draws the loss and accuracy curves side by side into {@link #png()}. */
    public void writeCurves() throws IOException {
        if (epochs.isEmpty()) {
            return;
        }
        int n = epochs.size();
        double[] x = new double[n];
        double[] trainLoss = new double[n];
        double[] testLoss = new double[n];
        double[] trainAcc = new double[n];
        double[] testAcc = new double[n];
        for (int i = 0; i < n; i++) {
            EpochStats s = epochs.get(i);
            x[i] = s.epoch();
            trainLoss[i] = s.trainLoss();
            testLoss[i] = s.testLoss();
            trainAcc[i] = s.trainAccuracy() * 100;
            testAcc[i] = s.testAccuracy() * 100;
        }
        writeCharts(List.of(
                new Panel(title + ": loss", "cross-entropy", x, series("train", trainLoss, "test", testLoss)),
                new Panel(title + ": accuracy", "accuracy (%)", x, series("train", trainAcc, "test", testAcc))));
    }

    /** Draws the panels side by side into {@link #png()} (each series with its own marker). */
    public void writeCharts(List<Panel> panels) throws IOException {
        if (panels.isEmpty()) {
            return;
        }
        System.setProperty("java.awt.headless", "true");
        Marker[] markers = {SeriesMarkers.CIRCLE, SeriesMarkers.DIAMOND, SeriesMarkers.SQUARE, SeriesMarkers.TRIANGLE_UP};
        List<XYChart> charts = new ArrayList<>();
        for (Panel p : panels) {
            XYChart c = new XYChartBuilder().width(640).height(420).title(p.title()).xAxisTitle("epoch")
                    .yAxisTitle(p.yAxisTitle()).build();
            int k = 0;
            for (Map.Entry<String, double[]> e : p.series().entrySet()) {
                c.addSeries(e.getKey(), p.x(), e.getValue()).setMarker(markers[k++ % markers.length]);
            }
            charts.add(c);
        }
        BitmapEncoder.saveBitmap(charts, 1, charts.size(), png().toString(), BitmapEncoder.BitmapFormat.PNG);
    }

    private static Map<String, double[]> series(String n1, double[] s1, String n2, double[] s2) {
        Map<String, double[]> m = new LinkedHashMap<>();
        m.put(n1, s1);
        m.put(n2, s2);
        return m;
    }
}
