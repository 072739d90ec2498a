package io.mn4j.gnn.io;

import io.mn4j.gnn.graph.Csr;
import io.mn4j.gnn.graph.Graph;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Reads a plain-text edge list: one edge {@code src dst} per line (whitespace or comma separated,
 * non-negative integer node ids), optionally a third column with a weight (then on every line).
 * Lines starting with {@code #} or {@code %} and blank lines are skipped. The graph has
 * {@code max id + 1} nodes unless a node count is given; edges are kept as listed (directed,
 * duplicates kept), so call {@link Graph#symmetrize()} for an undirected graph.
 */
public final class EdgeListReader {
    private EdgeListReader() {}

    /** Reads an edge list; the node count is the largest id + 1. */
    public static Graph read(Path file) throws IOException {
        return read(file, -1);
    }

    /**
     * Reads an edge list.
     *
     * @param numNodes number of nodes, or -1 for the largest id + 1
     */
    public static Graph read(Path file, long numNodes) throws IOException {
        if (!Files.exists(file)) throw new NoSuchFileException(file.toString(), null, "missing edge list");
        try (InputStream in = new BufferedInputStream(Files.newInputStream(file), 1 << 20)) {
            return read(in, file.toString(), numNodes);
        }
    }

    /**
     * Reads an edge list from a stream.
     *
     * @param source name used in error messages
     * @param numNodes number of nodes, or -1 for the largest id + 1
     */
    public static Graph read(InputStream in, String source, long numNodes) throws IOException {
        LongList src = new LongList(), dst = new LongList();
        FloatList w = new FloatList();
        int columns = -1;
        long line = 0, maxId = -1;
        long[] vals = new long[3];
        String[] raw = new String[3];
        StringBuilder tok = new StringBuilder();
        int c = in.read();
        while (c >= 0) {
            line++;
            int ncol = 0;
            boolean comment = false;
            tok.setLength(0);
            // One line: split into tokens on blanks and commas.
            while (c >= 0 && c != '\n') {
                if (ncol == 0 && tok.length() == 0 && (c == '#' || c == '%')) comment = true;
                if (!comment) {
                    if (c == ' ' || c == '\t' || c == ',' || c == '\r') {
                        if (tok.length() > 0) ncol = addToken(tok, raw, ncol, source, line);
                    } else {
                        tok.append((char) c);
                    }
                }
                c = in.read();
            }
            if (!comment && tok.length() > 0) ncol = addToken(tok, raw, ncol, source, line);
            if (c == '\n') c = in.read();
            if (comment || ncol == 0) continue;
            if (ncol < 2) throw new IOException(source + ":" + line + ": expected 'src dst [weight]', got one column");
            if (columns < 0) columns = ncol;
            else if (ncol != columns) throw new IOException(source + ":" + line + ": " + ncol + " columns, but earlier lines have " + columns);
            for (int k = 0; k < 2; k++) {
                try {
                    vals[k] = Long.parseLong(raw[k]);
                } catch (NumberFormatException e) {
                    throw new IOException(source + ":" + line + ": node id '" + raw[k] + "' is not an integer");
                }
                if (vals[k] < 0) throw new IOException(source + ":" + line + ": negative node id " + vals[k]);
                maxId = Math.max(maxId, vals[k]);
            }
            src.add(vals[0]);
            dst.add(vals[1]);
            if (columns == 3) {
                try {
                    w.add(Float.parseFloat(raw[2]));
                } catch (NumberFormatException e) {
                    throw new IOException(source + ":" + line + ": weight '" + raw[2] + "' is not a number");
                }
            }
        }
        long n = numNodes >= 0 ? numNodes : maxId + 1;
        if (maxId >= n) throw new IOException(source + ": node id " + maxId + " is not below the given node count " + n);
        try (Csr adj = Csr.fromCoo(n, n, dst.toArray(), src.toArray(), columns == 3 ? w.toArray() : null)) {
            return Graph.builder(adj).build();
        }
    }

    private static int addToken(StringBuilder tok, String[] raw, int ncol, String source, long line) throws IOException {
        if (ncol >= 3) throw new IOException(source + ":" + line + ": more than 3 columns");
        raw[ncol] = tok.toString();
        tok.setLength(0);
        return ncol + 1;
    }

    private static final class FloatList {
        float[] a = new float[1024];
        int n;

        void add(float v) {
            if (n == a.length) a = Arrays.copyOf(a, Math.min(Integer.MAX_VALUE - 8, 2 * n));
            a[n++] = v;
        }

        float[] toArray() {
            return Arrays.copyOf(a, n);
        }
    }
}
