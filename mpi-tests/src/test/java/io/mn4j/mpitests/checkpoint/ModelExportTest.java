package io.mn4j.mpitests.checkpoint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.mn4j.gnn.io.Npz;
import io.mn4j.mpitests.MpiLauncher;
import io.mn4j.tensor.Tensors;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.bytedeco.pytorch.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * A model trained over two ranks (model parallel), exported with its stages gathered into one
 * {@code .npz} and one LibTorch archive: python3 with numpy reads the {@code .npz} with PyTorch's
 * state_dict names and shapes and the values Java wrote; loaded back into a job of another size,
 * either file evaluates to the accuracy the training ended with; a file of another model and an
 * export folder that does not exist stop the job with a message that names the array or folder.
 */
class ModelExportTest {
    private static final long TIMEOUT = 240;
    private static final String TRAIN = "io.mn4j.examples.Train";
    private static final List<String> MLP = List.of("--epochs", "1", "--train-examples", "1200", "--test-examples", "300",
            "--no-progress", "--no-plot");
    /** state_dict name and shape of every tensor of the MLP 784-64-32-10. */
    private static final Map<String, List<Integer>> EXPECTED = new LinkedHashMap<>();

    static {
        EXPECTED.put("l0.weight", List.of(64, 784));
        EXPECTED.put("l0.bias", List.of(64));
        EXPECTED.put("l1.weight", List.of(32, 64));
        EXPECTED.put("l1.bias", List.of(32));
        EXPECTED.put("l2.weight", List.of(10, 32));
        EXPECTED.put("l2.bias", List.of(10));
    }

    /** Prints {name: [shape, sum, first value]} of every array of the .npz in argv[1], as JSON. */
    private static final String PYTHON = String.join("\n",
            "import json, sys, numpy as np",
            "with np.load(sys.argv[1]) as f:",
            "    print(json.dumps({k: [list(v.shape), float(v.astype(np.float64).sum()), float(v.flat[0]), str(v.dtype)]",
            "                      for k, v in f.items()}))");

    @Test
    void exportedModelReadsInNumpyAndLoadsBackToTheSameAccuracy(@TempDir(cleanup = CleanupMode.ON_SUCCESS) Path dir) throws Exception {
        Path npz = dir.resolve("model.npz");
        Path pt = dir.resolve("model.pt");
        String trained = accuracy(ok(run(2, dir.resolve("train"), "--export", npz.toString(), "--export", pt.toString())),
                "final test accuracy ");

        JsonNode arrays = new ObjectMapper().readTree(python(npz));
        List<String> names = new ArrayList<>();
        arrays.fieldNames().forEachRemaining(names::add);
        assertEquals(new ArrayList<>(EXPECTED.keySet()).stream().sorted().toList(), names.stream().sorted().toList());
        try (Npz written = Npz.open(npz)) {
            for (Iterator<Map.Entry<String, JsonNode>> it = arrays.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> a = it.next();
                List<Integer> shape = new ArrayList<>();
                a.getValue().get(0).forEach(d -> shape.add(d.asInt()));
                assertEquals(EXPECTED.get(a.getKey()), shape, a.getKey());
                assertEquals("float32", a.getValue().get(3).asText(), a.getKey());
                try (Tensor t = written.read(a.getKey())) {
                    float[] v = Tensors.toFloatArray(t);
                    double sum = 0;
                    for (float x : v) {
                        sum += x;
                    }
                    assertEquals(v[0], a.getValue().get(2).asDouble(), 0.0, a.getKey() + " first value");
                    assertEquals(sum, a.getValue().get(1).asDouble(), 1e-9 * (1 + Math.abs(sum)), a.getKey() + " sum");
                    assertTrue(sum != 0 || v.length == 0, a.getKey() + " is all zeros");
                }
            }
        }

        for (Object[] load : new Object[][] {{npz, 1}, {pt, 3}}) {
            MpiLauncher.Result r = ok(run((int) load[1], dir.resolve("load-" + load[1]), "--init-from", load[0].toString(),
                    "--evaluate-only"));
            assertEquals(trained, accuracy(r, "loaded " + load[0] + ": test accuracy "), r::describe);
        }
    }

    @Test
    void aFileOfAnotherModelOrAMissingFolderStopsEveryRank(@TempDir(cleanup = CleanupMode.ON_SUCCESS) Path dir) throws Exception {
        Path npz = dir.resolve("small.npz");
        List<String> other = List.of("--hidden", "48", "--export", npz.toString());
        ok(run(1, dir.resolve("small"), other.toArray(String[]::new)));
        MpiLauncher.Result r = run(2, dir.resolve("mismatch"), "--init-from", npz.toString(), "--evaluate-only");
        assertNotEquals(0, r.exitCode(), r::describe);
        assertTrue(r.output().contains("array 'l0.weight' is Float[48, 784] but the model's is Float[64, 784]"), r::describe);
        assertTrue(r.output().contains("rank 1"), r::describe);

        MpiLauncher.Result missing = run(2, dir.resolve("missing"), "--export", dir.resolve("no/such/folder/m.npz").toString());
        assertNotEquals(0, missing.exitCode(), missing::describe);
        assertTrue(missing.output().contains("the folder " + dir.resolve("no/such/folder") + " does not exist"), missing::describe);
    }

    /** Train with the small MLP (--hidden 64,32 unless {@code extra} says otherwise) and {@code extra}, its output in {@code out}. */
    private static MpiLauncher.Result run(int ranks, Path out, String... extra) throws IOException, InterruptedException {
        List<String> args = new ArrayList<>(MLP);
        if (!List.of(extra).contains("--hidden")) {
            args.addAll(List.of("--hidden", "64,32"));
        }
        args.addAll(List.of(extra));
        args.addAll(List.of("--out", out.toString()));
        MpiLauncher.Result r = MpiLauncher.run(MpiLauncher.LOCAL, ranks, TRAIN, args, out, TIMEOUT, Map.of(), p -> { });
        assertFalse(r.timedOut(), r::describe);
        return r;
    }

    private static MpiLauncher.Result ok(MpiLauncher.Result r) {
        assertEquals(0, r.exitCode(), r::describe);
        return r;
    }

    /** The percentage printed after {@code prefix}. */
    private static String accuracy(MpiLauncher.Result r, String prefix) {
        Matcher m = Pattern.compile(Pattern.quote(prefix) + "([0-9.]+)%").matcher(r.output());
        assertTrue(m.find(), () -> "no '" + prefix + "' in\n" + r.describe());
        return m.group(1);
    }

    private static String python(Path npz) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("python3", "-c", PYTHON, npz.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), () -> "python3 failed:\n" + out);
        return out;
    }
}
