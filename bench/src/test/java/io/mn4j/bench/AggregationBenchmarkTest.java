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

/**
 * Smoke test: the benchmark runs on small graphs in both node orders, every method (the C loop
 * compiled here with gcc) agrees with the kernel, the CSV and plot are complete, bad options are refused.
 */
class AggregationBenchmarkTest {
    @Test
    void runsOnSmallGraphs(@TempDir Path dir) throws Exception {
        Path program = dir.resolve("csragg");
        Process gcc = new ProcessBuilder("gcc", "-O3", "-fopenmp", "-o", program.toString(), "c/csragg.c").inheritIO().start();
        assertEquals(0, gcc.waitFor(), "gcc -O3 -fopenmp c/csragg.c");
        Path csv = dir.resolve("b.csv");
        StringWriter printed = new StringWriter();
        int exit = new CommandLine(new AggregationBenchmark()).setOut(new PrintWriter(printed, true)).execute("--nodes", "3000", "--degree", "8,12",
                "--features", "16,8", "--reps", "1", "--warmup", "0", "--node-order", "none,rcm", "--methods", String.join(",", AggregationBenchmark.METHODS),
                "--c-kernel", program.toString(), "--work", dir.resolve("work").toString(), "--csv", csv.toString(), "--png",
                dir.resolve("b.png").toString());
        assertEquals(0, exit, printed.toString());
        List<String> lines = Files.readAllLines(csv);
        // Per degree and width: 5 methods x 2 directions x 2 orders, and the two copies.
        assertEquals(1 + 4 * (5 * 2 * 2 + 2), lines.size(), String.join("\n", lines));
        for (String line : lines.subList(1, lines.size())) {
            String[] f = line.split(",");
            double check = Double.parseDouble(f[15]);
            assertTrue(check < (f[3].startsWith("c-") ? 1e-5 : 1e-3), line);
            assertTrue(Double.parseDouble(f[8]) > 0, line);
        }
        assertTrue(lines.get(1).startsWith("8.0,16,none,mn4j-csr,forward,3000,"), lines.get(1));
        assertTrue(printed.toString().contains("none/this"));
        assertTrue(Files.size(dir.resolve("b.png")) > 0);
    }

    @Test
    void refusesAnUnknownMethod() {
        StringWriter err = new StringWriter();
        CommandLine cl = new CommandLine(new AggregationBenchmark()).setErr(new PrintWriter(err, true));
        assertEquals(2, cl.execute("--methods", "mn4j-csr,magic"));
        assertTrue(err.toString().contains("unknown method 'magic'"), err.toString());
    }
}
