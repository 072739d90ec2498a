package io.mn4j.gnn.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Smoke test: the benchmark runs on a small graph, every method agrees with the kernel, the CSV is complete. */
class AggregationBenchmarkTest {
    @Test
    void runsOnASmallGraph(@TempDir Path dir) throws Exception {
        AggregationBenchmark.Config c = AggregationBenchmark.Config.parse(
                new String[] {"--nodes", "3000", "--degree", "8", "--features", "16", "--reps", "1", "--warmup", "0", "--csv", dir.resolve("b.csv").toString()});
        ByteArrayOutputStream bos = new ByteArrayOutputStream();
        List<AggregationBenchmark.Result> r = AggregationBenchmark.run(c, new PrintStream(bos, true, StandardCharsets.UTF_8));
        assertEquals(2 * AggregationBenchmark.METHODS.size(), r.size());
        for (AggregationBenchmark.Result x : r) {
            assertTrue(x.maxAbsError() < 1e-4, x.method() + " " + x.direction() + " differs from the kernel by " + x.maxAbsError());
            assertTrue(x.medianSeconds() > 0 && x.gflops() > 0);
        }
        AggregationBenchmark.writeCsv(c.csv, r);
        List<String> lines = Files.readAllLines(c.csv);
        assertEquals(1 + r.size(), lines.size());
        assertTrue(lines.get(1).startsWith("mn4j-csr,forward,3000,"), lines.get(1));
        assertTrue(bos.toString(StandardCharsets.UTF_8).contains("GFLOP/s"));
        assertThrows(IllegalArgumentException.class, () -> AggregationBenchmark.Config.parse(new String[] {"--methods", "magic"}));
    }
}
