package io.mn4j.examples.support;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The files a training run leaves in its output directory: {@code epochs.csv} (one
 * {@link EpochStats} line per epoch, written as the run goes) and {@code curves.png} (loss and
 * accuracy per epoch, training and test).
 */
public final class RunOutput {
    private final Path dir;
    private final String title;
    private final List<EpochStats> epochs = new ArrayList<>();

    /** Creates {@code dir} if needed and starts a fresh {@code epochs.csv}. */
    public RunOutput(Path dir, String title) throws IOException {
        this.dir = dir;
        this.title = title;
        Files.createDirectories(dir);
        Files.writeString(csv(), EpochStats.CSV_HEADER + "\n", StandardCharsets.UTF_8);
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
    public void add(EpochStats s) throws IOException {
        epochs.add(s);
        Files.writeString(csv(), s.csvLine() + "\n", StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.APPEND);
    }

    /** The epochs recorded so far. */
    public List<EpochStats> epochs() {
        return List.copyOf(epochs);
    }

    /** Draws the loss and accuracy curves side by side into {@link #png()}. */
    public void writeCurves() throws IOException {
        if (epochs.isEmpty()) {
            return;
        }
        System.setProperty("java.awt.headless", "true");
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
        XYChart loss = new XYChartBuilder().width(640).height(420).title(title + ": loss").xAxisTitle("epoch")
                .yAxisTitle("cross-entropy").build();
        loss.addSeries("train", x, trainLoss).setMarker(SeriesMarkers.CIRCLE);
        loss.addSeries("test", x, testLoss).setMarker(SeriesMarkers.DIAMOND);
        XYChart acc = new XYChartBuilder().width(640).height(420).title(title + ": accuracy").xAxisTitle("epoch")
                .yAxisTitle("accuracy (%)").build();
        acc.addSeries("train", x, trainAcc).setMarker(SeriesMarkers.CIRCLE);
        acc.addSeries("test", x, testAcc).setMarker(SeriesMarkers.DIAMOND);
        BitmapEncoder.saveBitmap(List.of(loss, acc), 1, 2, png().toString(), BitmapEncoder.BitmapFormat.PNG);
    }
}
