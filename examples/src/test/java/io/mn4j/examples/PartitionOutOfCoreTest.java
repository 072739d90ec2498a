package io.mn4j.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code Partition --write-ogb} then {@code --out-of-core}: the partition directory is, byte for
 * byte, the one the in-memory path writes for {@code --data synthetic} with the same parameters;
 * options the out-of-core path cannot honour are refused by name.
 */
class PartitionOutOfCoreTest {
    private static final String[] GRAPH = {"--nodes", "40000", "--avg-degree", "8.5", "--features", "6", "--classes", "5"};

    @TempDir
    Path tmp;

    private record Run(int code, String out, String err) {
    }

    private static Run run(String... args) {
        StringWriter out = new StringWriter(), err = new StringWriter();
        CommandLine cl = new CommandLine(new Partition());
        cl.setOut(new PrintWriter(out));
        cl.setErr(new PrintWriter(err));
        int code = cl.execute(args);
        return new Run(code, out.toString(), err.toString());
    }

    private static String[] concat(String[] a, String... b) {
        return Stream.concat(Stream.of(a), Stream.of(b)).toArray(String[]::new);
    }

    @Test
    void outOfCoreWritesWhatTheInMemoryPathWrites() throws IOException {
        Path ogb = tmp.resolve("syn");
        Run w = run(concat(GRAPH, "--data", "synthetic", "--write-ogb", ogb.toString()));
        assertEquals(0, w.code(), w.err());
        assertTrue(w.out().contains("wrote " + ogb), w.out());
        Path mem = tmp.resolve("mem"), ooc = tmp.resolve("ooc");
        Run m = run(concat(GRAPH, "--data", "synthetic", "-k", "3", "-m", "ldg", "-o", mem.toString()));
        assertEquals(0, m.code(), m.err());
        Path temp = tmp.resolve("temp");
        Run o = run("--data", ogb.toString(), "--out-of-core", "--memory-budget", "64k", "--temp-dir", temp.toString(), "-k", "3",
                "-o", ooc.toString());
        assertEquals(0, o.code(), o.err());
        String cut = m.out().lines().filter(l -> l.startsWith("edge cut")).findFirst().orElseThrow();
        assertTrue(o.out().contains(cut), "the same cut: " + cut + "\n" + o.out());
        assertSameFiles(mem, ooc);
        try (Stream<Path> left = Files.list(temp)) {
            assertEquals(List.of(), left.toList(), "temporary files are deleted");
        }
    }

    private static void assertSameFiles(Path expected, Path actual) throws IOException {
        List<Path> e = files(expected);
        assertEquals(e, files(actual));
        assertTrue(e.contains(Path.of("part-2", "features.npy")), e.toString());
        for (Path f : e) {
            assertArrayEquals(Files.readAllBytes(expected.resolve(f)), Files.readAllBytes(actual.resolve(f)), f + " byte for byte");
        }
    }

    private static List<Path> files(Path dir) throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(Files::isRegularFile).map(dir::relativize).sorted().toList();
        }
    }

    @Test
    void whatNeedsTheGraphInMemoryIsRefusedByName() throws IOException {
        Path ogb = tmp.resolve("syn");
        assertEquals(0, run("--data", "synthetic", "--nodes", "500", "--write-ogb", ogb.toString()).code());
        String data = ogb.toString();
        assertRefused("--method metis needs the whole graph in memory", "--data", data, "--out-of-core", "-m", "metis");
        assertRefused("--node-order rcm needs the graph in memory", "--data", data, "--out-of-core", "--node-order", "rcm");
        assertRefused("--normalize-features needs the features in memory", "--data", data, "--out-of-core", "--normalize-features");
        assertRefused("--out-of-core reads an OGB folder", "--data", "synthetic", "--out-of-core");
        assertRefused("--write-ogb writes the synthetic graph", "--data", data, "--write-ogb", tmp.resolve("x").toString());
    }

    private static void assertRefused(String message, String... args) {
        Run r = run(args);
        assertEquals(1, r.code(), r.out());
        assertTrue(r.err().contains(message), r.err());
    }

    @Test
    void badEdgeLineIsNamedWithItsFileAndLine() throws IOException {
        Path ogb = tmp.resolve("syn");
        assertEquals(0, run("--data", "synthetic", "--nodes", "500", "--write-ogb", ogb.toString()).code());
        Path edges = ogb.resolve("raw/edge.csv.gz");
        try (OutputStream o = new GZIPOutputStream(Files.newOutputStream(edges))) {
            o.write("0,1\n1;2\n".getBytes(StandardCharsets.US_ASCII));
        }
        Files.delete(ogb.resolve("raw/num-edge-list.csv.gz"));
        Run r = run("--data", ogb.toString(), "--out-of-core", "-k", "2", "-o", tmp.resolve("out").toString(), "--temp-dir",
                tmp.resolve("temp").toString());
        assertEquals(1, r.code());
        assertTrue(r.err().contains(edges + ":2: "), r.err());
    }
}
