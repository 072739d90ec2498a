package io.mn4j.mpitests.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.bench.CommBenchmark;
import io.mn4j.mpitests.MpiLauncher;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * The communication benchmark in its quick form on 2 ranks: every operation runs, its first
 * result of each size passes the benchmark's own value checks (a wrong value ends the job), and
 * one CSV row comes out per operation and size. Times are not asserted: speed is the benchmark's
 * business, not a test's.
 */
class CommBenchmarkTest {
    private static final List<String> OPS = List.of("pingpong", "pingpong_into", "pingpong_mpijava", "allgather",
            "allgather_into", "allgather_mpijava", "alltoall", "alltoall_into", "alltoall_mpijava", "allreduce",
            "allreduce_into", "allreduce_mpijava");

    @Test
    void quickRunChecksEveryOperationAndWritesOneRowPerSize(@TempDir(cleanup = CleanupMode.ON_SUCCESS) Path dir)
            throws Exception {
        Path csv = dir.resolve("comm.csv");
        MpiLauncher.Result r = MpiLauncher.run(2, CommBenchmark.class.getName(),
                List.of("--quick", "--ops", String.join(",", OPS), "--out", csv.toString()), dir, 180);
        assertEquals(0, r.exitCode(), r::describe);
        List<String> rows = Files.readAllLines(csv);
        Set<String> seen = new TreeSet<>();
        for (String row : rows) {
            String[] f = row.split(",");
            assertEquals(6, f.length, () -> "row " + row);
            assertEquals("java", f[0], () -> "row " + row);
            assertEquals("2", f[2], () -> "row " + row);
            assertTrue(Double.parseDouble(f[4]) > 0 && Double.parseDouble(f[5]) > 0, () -> "row " + row);
            assertTrue(seen.add(f[1] + " " + f[3]), () -> "duplicate row " + row);
        }
        for (String op : OPS) {
            long sizes = seen.stream().filter(k -> k.startsWith(op + " ")).count();
            assertTrue(sizes >= 2, () -> op + ": " + sizes + " sizes in\n" + String.join("\n", rows));
        }
    }
}
