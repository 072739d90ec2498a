package io.mn4j.gnn.partition;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Out of core within a heap smaller than the edges: 4M edge lines (8M directed entries, 32 MB as
 * bare int pairs, 64 MB as the reader's two long arrays) partitioned and written by a JVM with
 * {@code -Xmx32m}, at most 256 MB resident, and a 4 MiB budget; the in-memory path in the same
 * limits runs out of memory.
 */
class OutOfCoreMemoryTest {
    /** The whole process's resident memory allowed (JavaCPP checks it at each native allocation); the JVM with LibTorch loaded ends near 150 MB. */
    private static final String PHYSICAL = "256m";

    @TempDir
    Path tmp;

    private record Run(int code, String output) {
    }

    private Run fork(String mode, Path folder) throws IOException, InterruptedException {
        Path log = tmp.resolve(mode + ".log");
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx32m", "-XX:+UseSerialGC",
                "-Dorg.bytedeco.javacpp.maxPhysicalBytes=" + PHYSICAL,
                "-cp", System.getProperty("java.class.path"), OutOfCoreMain.class.getName(), mode, folder.toString(),
                tmp.resolve("out-" + mode).toString(), tmp.resolve("temp").toString())
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(mode + " run did not end in 120 s");
        }
        return new Run(p.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
    }

    @Test
    void partitionsWithAHeapSmallerThanTheEdges() throws Exception {
        OgbTestFolders.Spec s = new OgbTestFolders.Spec();
        s.nodes = 200_000;
        s.lines = 4_000_000;
        s.features = 2;
        s.gzip = false;
        Path folder = OgbTestFolders.write(tmp.resolve("big"), s);
        Run ooc = fork("ooc", folder);
        assertEquals(0, ooc.code(), ooc.output());
        assertTrue(ooc.output().contains("partitioned"), ooc.output());
        PartitionMetadata m = PartitionMetadata.read(tmp.resolve("out-ooc"));
        assertEquals(200_000, m.numNodes());
        assertTrue(m.numEdges() > 7_000_000, m.toString());
        try (Stream<Path> left = Files.list(tmp.resolve("temp"))) {
            assertEquals(List.of(), left.toList(), "temporary files are deleted");
        }
        Run mem = fork("mem", folder);
        assertNotEquals(0, mem.code(), "the in-memory path fits this heap: the test proves nothing\n" + mem.output());
        assertTrue(mem.output().contains("OutOfMemoryError"), mem.output());
    }
}
