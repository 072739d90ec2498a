package io.mn4j.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** Smoke test: the benchmark runs on a small graph, every method agrees with the kernel, the CSV is complete, bad options are refused. */
class AggregationBenchmarkTest {
    @Test
    void runsOnASmallGraph(@TempDir Path dir) throws Exception {
        AggregationBenchmark b = new AggregationBenchmark();
        new CommandLine(b).parseArgs("--nodes", "3000", "--degree", "8", "--features", "16", "--reps", "1", "--warmup", "0", "--csv",
                dir.resolve("b.csv").toString());
        StringWriter printed = new StringWriter();
        List<AggregationBenchmark.Result> r = b.run(new PrintWriter(printed, true));
        assertEquals(2 * AggregationBenchmark.METHODS.size(), r.size());
        for (AggregationBenchmark.Result x : r) {
            assertTrue(x.maxAbsError() < 1e-4, x.method() + " " + x.direction() + " differs from the kernel by " + x.maxAbsError());
            assertTrue(x.medianSeconds() > 0 && x.gflops() > 0);
        }
        AggregationBenchmark.writeCsv(b.csv, r);
        List<String> lines = Files.readAllLines(b.csv);
        assertEquals(1 + r.size(), lines.size());
        assertTrue(lines.get(1).startsWith("mn4j-csr,forward,3000,"), lines.get(1));
        assertTrue(printed.toString().contains("GFLOP/s"));
    }

    @Test
    void refusesAnUnknownMethod() {
        StringWriter err = new StringWriter();
        CommandLine cl = new CommandLine(new AggregationBenchmark()).setErr(new PrintWriter(err, true));
        assertEquals(2, cl.execute("--methods", "mn4j-csr,magic"));
        assertTrue(err.toString().contains("unknown method 'magic'"), err.toString());
    }
}
