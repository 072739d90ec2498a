package io.mn4j.mpitests.gnn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.graph.SyntheticGraphs;
import io.mn4j.gnn.partition.PartitionWriter;
import io.mn4j.gnn.partition.RangePartitioner;
import io.mn4j.mpitests.MpiLauncher;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 36, features larger than memory: two ranks train on partitions whose features file (about
 * 560 MiB each) is larger than the rank's memory limit ({@value #LIMIT_MIB} MiB of JavaCPP's
 * maxPhysicalBytes, which counts the process's own memory, not file pages), memory-mapped; the
 * same training with the features loaded, under a limit that fits them, must compute exactly the
 * same losses, accuracies and parameters. The capped run also shows that loading the file there
 * would exceed the limit, so the limit binds.
 */
class MappedFeaturesTest {
    /** The ranks' limit: above what a rank needs besides the features (about 200-250 MiB), below one features file. */
    static final long LIMIT_MIB = 480;
    static final int NODES = 2 * 72_000, FEATURES = 2048;

    @Test
    void trainingOnMappedFeaturesLargerThanTheLimitEqualsTrainingOnLoadedOnes(@TempDir(cleanup = CleanupMode.ON_SUCCESS) Path dir)
            throws Exception {
        try (Graph g = SyntheticGraphs.plantedPartition(NODES, 6, 4, FEATURES, 3,
                new SyntheticGraphs.Options().split(0.004, 0.01))) {
            PartitionWriter.write(dir, g, new RangePartitioner().partition(g, 2, 0), 2, "range", 0);
        }
        long file = Files.size(dir.resolve("part-0/features.npy"));
        assertTrue(file > LIMIT_MIB << 20, "the features file (" + file + " bytes) is larger than the limit");

        MpiLauncher.Result mapped = launch(dir, "mapped", LIMIT_MIB);
        MpiLauncher.Result loaded = launch(dir, "loaded", 4096);
        for (int r = 0; r < 2; r++) {
            List<String> m = compared(dir.resolve("results-mapped-rank" + r + ".txt"));
            List<String> l = compared(dir.resolve("results-loaded-rank" + r + ".txt"));
            assertEquals(7, m.size(), "two sampled epochs and parameters, three full-graph epochs and parameters: " + m);
            assertEquals(l, m, "rank " + r + ": mapped and loaded features train alike");
        }
        assertTrue(mapped.rankLines().get(0).stream().anyMatch(s -> s.contains("the features loaded instead exceed")), mapped::describe);
        assertFalse(loaded.output().contains("OutOfMemoryError"), loaded::describe);
    }

    private static MpiLauncher.Result launch(Path dir, String run, long limitMib) throws Exception {
        Map<String, String> env = Map.of(MappedFeaturesSuite.DIR, dir.toString(), MappedFeaturesSuite.RUN, run,
                "JAVA_TOOL_OPTIONS", "-Xmx192m -Dorg.bytedeco.javacpp.maxPhysicalBytes=" + (limitMib << 20));
        MpiLauncher.Result r = MpiLauncher.runSuite(2, MappedFeaturesSuite.class, 600, env);
        assertFalse(r.timedOut(), r::describe);
        assertEquals(0, r.exitCode(), r::describe);
        for (List<String> lines : r.rankLines().values()) {
            for (String line : lines) {
                assertTrue(line.startsWith("PASS"), () -> run + ": " + line + "\n" + r.describe());
            }
        }
        return r;
    }

    /** The lines both runs must share (the memory figures differ). */
    private static List<String> compared(Path f) throws Exception {
        return Files.readAllLines(f).stream().filter(s -> !s.endsWith("(not compared)")).toList();
    }
}
