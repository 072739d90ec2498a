package io.mn4j.gnn.partition;

import io.mn4j.gnn.graph.Graph;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * METIS k-way partitioning through the {@code gpmetis} program (Debian package {@code metis}).
 *
 * <p>Writes the undirected simple graph (symmetrized, self loops removed) in METIS's graph file
 * format to a temporary directory, runs {@code gpmetis -ptype=kway -objtype=cut -seed=SEED FILE
 * PARTS} (default imbalance 3%) and reads {@code FILE.part.PARTS}. The program is looked up in the
 * system property {@code mn4j.gpmetis}, the environment variable {@code MN4J_GPMETIS}, the
 * {@code PATH}, then {@code /usr/bin/gpmetis}. METIS uses 32-bit indices here: graphs need fewer
 * than 2^31 nodes and undirected edges.
 */
public final class MetisPartitioner implements Partitioner {
    private static final Logger LOG = LoggerFactory.getLogger(MetisPartitioner.class);

    private final Path executable;
    private final List<String> extraOptions;

    /** gpmetis found as described in the class comment, default options. */
    public MetisPartitioner() {
        this(null, List.of());
    }

    /**
     * @param executable path of gpmetis, or null to look it up
     * @param extraOptions more gpmetis options, e.g. {@code -ufactor=10} or {@code -objtype=vol}
     */
    public MetisPartitioner(Path executable, List<String> extraOptions) {
        this.executable = executable;
        this.extraOptions = List.copyOf(extraOptions);
    }

    /** The gpmetis program that would be run, or null when none is found. */
    public static Path findGpmetis() {
        String prop = System.getProperty("mn4j.gpmetis");
        if (prop != null && !prop.isBlank()) return Path.of(prop);
        String env = System.getenv("MN4J_GPMETIS");
        if (env != null && !env.isBlank()) return Path.of(env);
        String path = System.getenv("PATH");
        if (path != null) {
            for (String dir : path.split(File.pathSeparator)) {
                if (dir.isEmpty()) continue;
                Path p = Path.of(dir, "gpmetis");
                if (Files.isExecutable(p)) return p;
            }
        }
        Path deb = Path.of("/usr/bin/gpmetis");
        return Files.isExecutable(deb) ? deb : null;
    }

    /** Whether gpmetis can be run on this machine. */
    public static boolean isAvailable() {
        Path p = findGpmetis();
        return p != null && Files.isExecutable(p);
    }

    @Override
    public int[] partition(Graph g, int parts, long seed) {
        Partitioners.checkParts(parts);
        int n = Math.toIntExact(g.numNodes());
        if (parts == 1 || n == 0) return new int[n];
        Path exe = executable != null ? executable : findGpmetis();
        if (exe == null || !Files.isExecutable(exe)) {
            throw new PartitioningException("gpmetis not found (" + (exe != null ? exe + " is not executable" : "looked at -Dmn4j.gpmetis, $MN4J_GPMETIS, $PATH and /usr/bin")
                    + "); install Debian's 'metis' package (apt-get install metis) or use the built-in partitioner 'ldg'");
        }
        Partitioners.Undirected u = Partitioners.undirected(g);
        long undirectedEdges = u.col.length / 2;
        if (undirectedEdges > Integer.MAX_VALUE) throw new PartitioningException("graph too large for gpmetis's 32-bit indices: " + undirectedEdges + " edges");
        Path dir = null;
        try {
            dir = Files.createTempDirectory("mn4j-metis");
            Path graphFile = dir.resolve("graph.metis");
            writeGraph(graphFile, n, undirectedEdges, u);
            List<String> cmd = new ArrayList<>(List.of(exe.toString(), "-ptype=kway", "-objtype=cut", "-seed=" + seed));
            cmd.addAll(extraOptions);
            cmd.add(graphFile.toString());
            cmd.add(Integer.toString(parts));
            Path log = dir.resolve("gpmetis.log");
            LOG.debug("running {}", cmd);
            Process proc = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            int rc = proc.waitFor();
            String out = Files.readString(log, StandardCharsets.UTF_8);
            if (rc != 0) throw new PartitioningException("gpmetis failed (exit code " + rc + "): " + tail(out));
            LOG.debug("gpmetis output: {}", out);
            Path partFile = dir.resolve("graph.metis.part." + parts);
            if (!Files.exists(partFile)) throw new PartitioningException("gpmetis wrote no " + partFile.getFileName() + ": " + tail(out));
            return readParts(partFile, n, parts);
        } catch (IOException e) {
            throw new PartitioningException("running gpmetis failed: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new PartitioningException("interrupted while waiting for gpmetis", e);
        } finally {
            deleteQuietly(dir);
        }
    }

    @Override
    public String name() {
        return "metis";
    }

    /** METIS graph format: "n m", then one line per node with its 1-based neighbours. */
    static void writeGraph(Path file, int n, long m, Partitioners.Undirected u) throws IOException {
        try (OutputStream os = new BufferedOutputStream(Files.newOutputStream(file), 1 << 20)) {
            byte[] buf = new byte[24];
            os.write((n + " " + m + "\n").getBytes(StandardCharsets.US_ASCII));
            for (int v = 0; v < n; v++) {
                for (long e = u.rowptr[v]; e < u.rowptr[v + 1]; e++) {
                    if (e > u.rowptr[v]) os.write(' ');
                    int len = digits(u.col[(int) e] + 1L, buf);
                    os.write(buf, buf.length - len, len);
                }
                os.write('\n');
            }
        }
    }

    private static int digits(long x, byte[] buf) {
        int p = buf.length;
        do {
            buf[--p] = (byte) ('0' + x % 10);
            x /= 10;
        } while (x > 0);
        return buf.length - p;
    }

    private static int[] readParts(Path file, int n, int parts) throws IOException {
        int[] a = new int[n];
        int v = 0;
        try (BufferedReader r = Files.newBufferedReader(file, StandardCharsets.US_ASCII)) {
            String line;
            while ((line = r.readLine()) != null) {
                line = line.trim();
                if (line.isEmpty()) continue;
                if (v >= n) throw new PartitioningException(file + ": more than " + n + " lines");
                int p;
                try {
                    p = Integer.parseInt(line);
                } catch (NumberFormatException e) {
                    throw new PartitioningException(file + ": line " + (v + 1) + " is not a partition number: " + line);
                }
                if (p < 0 || p >= parts) throw new PartitioningException(file + ": partition " + p + " out of range [0," + parts + ")");
                a[v++] = p;
            }
        }
        if (v != n) throw new PartitioningException(file + ": " + v + " lines for " + n + " nodes");
        return a;
    }

    private static String tail(String s) {
        s = s.strip();
        return s.length() > 2000 ? "..." + s.substring(s.length() - 2000) : s;
    }

    private static void deleteQuietly(Path dir) {
        if (dir == null) return;
        try (var files = Files.list(dir)) {
            for (Path p : (Iterable<Path>) files::iterator) Files.deleteIfExists(p);
            Files.deleteIfExists(dir);
        } catch (IOException e) {
            LOG.warn("could not delete {}: {}", dir, e.toString());
        }
    }
}
