package io.mn4j.gnn.io;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.zip.GZIPInputStream;

/**
 * A streaming reader of numeric CSV as OGB's raw files hold it (no header, comma-separated numbers,
 * one record per line), from a gzip ({@code .gz}) or plain file. It parses bytes in place, without
 * a string per line or field, which at OGB's sizes (124M edges) would be that many garbage objects
 * ({@code docs/measurements.md} compares it with gunzip alone and with {@code readLine} + {@code split}).
 * Every error names the file and the line. Blank lines are skipped.
 */
final class NumericCsv implements Closeable {
    private static final float[] POW10 = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f, 1e7f, 1e8f, 1e9f, 1e10f};
    private static final int EOF = -1;

    private final String source;
    private final InputStream in;
    private final byte[] buf = new byte[1 << 16];
    private int pos;
    private int lim;
    private long line;
    /** Fields read of the current line. */
    private int column;
    private final byte[] token = new byte[64];
    private int tokenLength;

    private NumericCsv(String source, InputStream in) {
        this.source = source;
        this.in = in;
    }

    /** Opens {@code file}, gunzipping it when its name ends with {@code .gz}. */
    static NumericCsv open(Path file) throws IOException {
        InputStream raw;
        try {
            raw = Files.newInputStream(file);
        } catch (NoSuchFileException e) {
            throw new NoSuchFileException(file.toString(), null, "missing file");
        }
        if (!file.getFileName().toString().endsWith(".gz")) {
            return new NumericCsv(file.toString(), raw);
        }
        try {
            return new NumericCsv(file.toString(), new GZIPInputStream(raw, 1 << 16));
        } catch (IOException e) {
            raw.close();
            throw new GraphFormatException(file + ": not a gzip file (" + e.getMessage() + ")", e);
        }
    }

    /** The file, for messages. */
    String source() {
        return source;
    }

    /** The number of the line being read (from 1; 0 before the first). */
    long line() {
        return line;
    }

    /** "FILE:LINE: " for a message about the current line. */
    String at() {
        return source + ":" + line + ": ";
    }

    /** Moves to the next line that is not blank; false at the end of the file. */
    boolean nextLine() throws IOException {
        while (true) {
            int b = peek();
            if (b == EOF) {
                return false;
            }
            line++;
            column = 0;
            if (b == '\r') {
                pos++;
                b = peek();
            }
            if (b != '\n') {
                return true;
            }
            pos++;
        }
    }

    /** Whether the current line has no field left. */
    boolean atEndOfLine() throws IOException {
        int b = peek();
        return b == EOF || b == '\n' || b == '\r';
    }

    /**
     * Ends the current line.
     *
     * @throws GraphFormatException when it has more fields, saying that it should have {@code fields}
     */
    void endLine(int fields) throws IOException {
        if (!atEndOfLine()) {
            throw new GraphFormatException(at() + "more than " + fields + " column" + (fields == 1 ? "" : "s"));
        }
        if (peek() == '\r') {
            pos++;
        }
        if (peek() == '\n') {
            pos++;
        }
    }

    /** The next field as an integer. */
    long readLong(String what) throws IOException {
        // Digits straight from the buffer: edges are most of OGB's lines, and a token copy per field halves the speed.
        int b = peek();
        if (b == '-' || b == '+' || b < '0' || b > '9') {
            return readLongToken(what);
        }
        column++;
        long v = 0;
        while (b >= '0' && b <= '9') {
            if (v > (Long.MAX_VALUE - 9) / 10) {
                throw new GraphFormatException(at() + "column " + column + ": " + what + " is too large");
            }
            v = v * 10 + (b - '0');
            pos++;
            b = pos < lim ? buf[pos] & 0xff : peek();
        }
        if (b == ',') {
            pos++;
            if (atEndOfLine()) {
                throw new GraphFormatException(at() + "empty last column after a comma");
            }
        } else if (b != '\n' && b != '\r' && b != EOF) {
            throw new GraphFormatException(at() + "column " + column + ": " + what + " is not an integer");
        }
        return v;
    }

    private long readLongToken(String what) throws IOException {
        readToken(what);
        int i = 0;
        boolean negative = token[0] == '-';
        if (negative || token[0] == '+') {
            i++;
        }
        if (i == tokenLength) {
            throw notA(what, "an integer");
        }
        long v = 0;
        for (; i < tokenLength; i++) {
            int d = token[i] - '0';
            if (d < 0 || d > 9 || v > (Long.MAX_VALUE - d) / 10) {
                throw notA(what, "an integer");
            }
            v = v * 10 + d;
        }
        return negative ? -v : v;
    }

    /** The next field as a float, exactly as {@link Float#parseFloat} reads it ("nan" too). */
    float readFloat(String what) throws IOException {
        readToken(what);
        float fast = fastFloat();
        if (!Float.isNaN(fast)) {
            return fast;
        }
        String s = new String(token, 0, tokenLength, StandardCharsets.US_ASCII);
        if (s.equalsIgnoreCase("nan")) {
            return Float.NaN;
        }
        try {
            return Float.parseFloat(s);
        } catch (NumberFormatException e) {
            throw notA(what, "a number");
        }
    }

    /**
     * The token as a float when it is a plain decimal whose digits fit a float's 24-bit significand
     * and whose power of ten is at most 10: one correctly rounded float operation then gives
     * exactly what {@code Float.parseFloat} gives. NaN otherwise (the caller parses it the slow way).
     */
    private float fastFloat() {
        int i = 0;
        boolean negative = token[0] == '-';
        if (negative || token[0] == '+') {
            i++;
        }
        long m = 0;
        int exp = 0;
        int digits = 0;
        boolean dot = false;
        for (; i < tokenLength; i++) {
            int c = token[i];
            if (c == '.' && !dot) {
                dot = true;
                continue;
            }
            int d = c - '0';
            if (d < 0 || d > 9) {
                break;
            }
            m = m * 10 + d;
            digits++;
            if (dot) {
                exp--;
            }
            if (m > (1 << 24)) {
                return Float.NaN;
            }
        }
        if (digits == 0) {
            return Float.NaN;
        }
        if (i < tokenLength) {
            if (token[i] != 'e' && token[i] != 'E' || i + 1 == tokenLength) {
                return Float.NaN;
            }
            i++;
            boolean negExp = token[i] == '-';
            if (negExp || token[i] == '+') {
                i++;
            }
            int e = 0;
            if (i == tokenLength) {
                return Float.NaN;
            }
            for (; i < tokenLength; i++) {
                int d = token[i] - '0';
                if (d < 0 || d > 9 || e > 1000) {
                    return Float.NaN;
                }
                e = e * 10 + d;
            }
            exp += negExp ? -e : e;
        }
        if (exp < -10 || exp > 10) {
            return Float.NaN;
        }
        float v = exp >= 0 ? m * POW10[exp] : m / POW10[-exp];
        return negative ? -v : v;
    }

    /** Reads the next field's bytes (blanks around it dropped) into {@code token} and moves past its comma. */
    private void readToken(String what) throws IOException {
        if (atEndOfLine()) {
            throw new GraphFormatException(at() + "only " + column + " column" + (column == 1 ? "" : "s") + ", no " + what + " after them");
        }
        tokenLength = 0;
        column++;
        while (true) {
            int b = peek();
            if (b == EOF || b == '\n' || b == '\r') {
                break;
            }
            pos++;
            if (b == ',') {
                if (atEndOfLine()) {
                    throw new GraphFormatException(at() + "empty last column after a comma");
                }
                break;
            }
            if (b == ' ' || b == '\t') {
                continue;
            }
            if (tokenLength == token.length) {
                throw notA(what, "a number");
            }
            token[tokenLength++] = (byte) b;
        }
        if (tokenLength == 0) {
            throw new GraphFormatException(at() + "column " + column + " is empty: no " + what);
        }
    }

    private GraphFormatException notA(String what, String kind) {
        String text = new String(token, 0, tokenLength, StandardCharsets.US_ASCII);
        return new GraphFormatException(at() + "column " + column + ": " + what + " '" + text + (tokenLength == token.length ? "...'" : "'") + " is not " + kind);
    }

    private int peek() throws IOException {
        if (pos == lim) {
            fill();
            if (lim <= 0) {
                return EOF;
            }
        }
        return buf[pos] & 0xff;
    }

    private void fill() throws IOException {
        pos = 0;
        try {
            lim = in.read(buf);
        } catch (IOException e) {
            throw new GraphFormatException(source + ": the data ends early or is corrupt after line " + line + " (" + e.getMessage()
                    + "): an incomplete download or copy?", e);
        }
    }

    @Override
    public void close() throws IOException {
        in.close();
    }
}
