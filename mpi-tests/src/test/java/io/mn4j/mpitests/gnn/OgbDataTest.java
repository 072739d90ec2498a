package io.mn4j.mpitests.gnn;

import static io.mn4j.mpitests.gnn.TrainGnnCliTest.inProcess;
import static io.mn4j.mpitests.gnn.TrainGnnCliTest.trainGnn;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.examples.Partition;
import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.io.CoraFile;
import io.mn4j.gnn.io.Npz;
import io.mn4j.gnn.io.NpzGraphReader;
import io.mn4j.gnn.partition.PartitionMetadata;
import io.mn4j.gnn.partition.PartitionReader;
import io.mn4j.mpitests.MpiLauncher;
import io.mn4j.tensor.Tensors;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.zip.GZIPOutputStream;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --data DIR} of {@code Partition} and {@code TrainGnn} on an OGB node-property folder (Cora
 * written in the ogb package's layout, each undirected edge stored once), and bad labels stopping
 * every rank before any partition is written.
 */
class OgbDataTest {
    /** Cora as an OGB folder: edges src < dst only (the reader's caller makes them undirected again), its public split. */
    static Path coraAsOgb(Path dir) throws IOException {
        try (Graph g = NpzGraphReader.read(CoraFile.find()); PointerScope s = new PointerScope()) {
            long[] rowptr = Tensors.toLongArray(g.rowptr());
            long[] col = Tensors.toLongArray(g.col());
            StringBuilder edges = new StringBuilder();
            long count = 0;
            for (int dst = 0; dst < g.numNodes(); dst++) {
                for (long e = rowptr[dst]; e < rowptr[dst + 1]; e++) {
                    if (col[(int) e] < dst) {
                        edges.append(col[(int) e]).append(',').append(dst).append('\n');
                        count++;
                    }
                }
            }
            gz(dir.resolve("raw/edge.csv.gz"), edges);
            gz(dir.resolve("raw/num-edge-list.csv.gz"), count + "\n");
            gz(dir.resolve("raw/num-node-list.csv.gz"), g.numNodes() + "\n");
            float[] x = Tensors.toFloatArray(g.features());
            long f = g.numFeatures();
            StringBuilder feat = new StringBuilder();
            for (int i = 0; i < x.length; i++) {
                feat.append(x[i] == 0 ? "0" : "1.0").append((i + 1) % f == 0 ? "\n" : ",");
            }
            gz(dir.resolve("raw/node-feat.csv.gz"), feat);
            StringBuilder labels = new StringBuilder();
            for (long y : Tensors.toLongArray(g.labels())) {
                labels.append(y).append('\n');
            }
            gz(dir.resolve("raw/node-label.csv.gz"), labels);
            String[] names = {"train", "valid", "test"};
            Tensor[] masks = {g.trainMask(), g.valMask(), g.testMask()};
            for (int k = 0; k < 3; k++) {
                StringBuilder ids = new StringBuilder();
                for (long i : Tensors.toLongArray(masks[k].nonzero().view(-1))) {
                    ids.append(i).append('\n');
                }
                gz(dir.resolve("split/public/" + names[k] + ".csv.gz"), ids);
            }
        }
        return dir;
    }

    private static void gz(Path file, CharSequence text) throws IOException {
        Files.createDirectories(file.getParent());
        try (OutputStream o = new GZIPOutputStream(Files.newOutputStream(file)); PrintStream p = new PrintStream(o, false, "US-ASCII")) {
            p.append(text);
        }
    }

    @Test
    void partitionAndTrainGnnReadOgbFolders(@TempDir(cleanup = CleanupMode.ON_SUCCESS) Path base) throws Exception {
        Path ogb = coraAsOgb(base.resolve("ogbn_cora"));
        String[] r = inProcess(new Partition(), "--data", ogb.toString(), "--parts", "2", "--method", "ldg", "--out",
                base.resolve("parts").toString());
        assertEquals("0", r[0], () -> r[1] + r[2]);
        assertTrue(r[1].contains("ogbn_cora: 2708 nodes, 10556 directed edges, 1433 features, 7 classes"), r[1]);
        PartitionMetadata m = PartitionReader.readMetadata(base.resolve("parts"));
        assertEquals(10556, m.numEdges(), "each stored edge in both directions, as in cora.npz");

        Path out = base.resolve("run");
        MpiLauncher.Result t = trainGnn(out, "--data", ogb.toString(), "--epochs", "30", "--no-plot");
        assertFalse(t.timedOut(), t::describe);
        assertEquals(0, t.exitCode(), t::describe);
        assertTrue(t.output().contains("ogbn_cora: 2708 nodes"), t::describe);
        String last = Files.readAllLines(out.resolve("epochs.csv")).get(30);
        double test = Double.parseDouble(last.split(",")[4]);
        assertTrue(test > 0.6, "Cora's public split after 30 epochs: well above chance (1/7), got " + test);
    }

    @Test
    void badLabelsStopEveryRankBeforeAnyPartitionIsWritten(@TempDir(cleanup = CleanupMode.ON_SUCCESS) Path base) throws Exception {
        Path ogb = coraAsOgb(base.resolve("ogbn_arxiv"));
        gz(ogb.resolve("raw/node-label.csv.gz"), "3\n".repeat(100) + "40\n" + "1\n".repeat(2607));
        MpiLauncher.Result bad = trainGnn(base.resolve("ogb"), "--data", ogb.toString(), "--epochs", "1");
        assertFailedBeforeWriting(bad, base.resolve("ogb"), "node-label.csv.gz", "line 101 (node 100) has label 40",
                "outside the 40 classes declared");

        Path npz = base.resolve("huge-label.npz");
        try (Graph g = NpzGraphReader.read(CoraFile.find()); PointerScope s = new PointerScope()) {
            long[] y = Tensors.toLongArray(g.labels());
            y[1234] = 1_000_000;
            Map<String, Tensor> arrays = new LinkedHashMap<>();
            try (Npz cora = Npz.open(CoraFile.find())) {
                for (String name : cora.names()) {
                    arrays.put(name, cora.read(name));
                }
            }
            arrays.put("labels", Tensors.longs(y));
            Npz.write(npz, arrays, false);
        }
        MpiLauncher.Result huge = trainGnn(base.resolve("npz"), "--data", npz.toString(), "--epochs", "1");
        assertFailedBeforeWriting(huge, base.resolve("npz"), "huge-label.npz: labels: node 1234 has label 1000000",
                "1000001 classes for 8 distinct labels");
    }

    private static void assertFailedBeforeWriting(MpiLauncher.Result r, Path out, String... fragments) {
        assertFalse(r.timedOut(), r::describe);
        assertNotEquals(0, r.exitCode(), r::describe);
        for (int rank = 0; rank < 2; rank++) {
            String prefix = "TrainGnn: rank " + rank + ": ";
            assertTrue(r.output().lines().anyMatch(l -> l.startsWith(prefix)), r::describe);
        }
        for (String f : fragments) {
            assertTrue(r.output().contains(f), () -> "message lacks '" + f + "':\n" + r.describe());
        }
        assertFalse(Files.exists(out.resolve("partitions/metadata.json")), "no partition written");
        assertFalse(r.output().contains("OutOfMemoryError"), r::describe);
    }
}
