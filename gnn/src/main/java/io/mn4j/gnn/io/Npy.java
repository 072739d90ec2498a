package io.mn4j.gnn.io;

import io.mn4j.tensor.Tensors;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * Reads and writes numpy's {@code .npy} format (versions 1.0, 2.0 and 3.0) directly from and into
 * LibTorch tensor memory.
 *
 * <p>Supported: C-order, little-endian arrays of {@code <f4 <f8 <i4 <i8 |b1 |u1 |i1} (float32,
 * float64, int32, int64, bool, uint8, int8). Anything else, a wrong magic string, a malformed header
 * or missing data raises an {@link NpyFormatException} naming the source and what was wrong. Files
 * must not have bytes after the data (a sign of corruption).
 */
public final class Npy {
    private static final byte[] MAGIC = {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y'};
    private static final int CHUNK = 1 << 26;
    private static final int ALIGN = 64;

    private Npy() {}

    /** Reads a {@code .npy} file into a new contiguous CPU tensor. */
    public static Tensor read(Path file) throws IOException {
        try (FileChannel ch = open(file)) {
            long size = ch.size();
            NpyHeader h = readHeader(ch, file.toString());
            long expected = h.headerBytes() + h.dataBytes();
            if (size < expected) {
                throw new NpyFormatException(file + ": truncated: header says " + h + " (" + h.dataBytes() + " data bytes) but the file has only "
                        + (size - h.headerBytes()) + " data bytes");
            }
            if (size > expected) {
                throw new NpyFormatException(file + ": " + (size - expected) + " unexpected bytes after the data of " + h);
            }
            return readData(ch, h, file.toString());
        }
    }

    /** Reads only the header of a {@code .npy} file. */
    public static NpyHeader readHeader(Path file) throws IOException {
        try (FileChannel ch = open(file)) {
            return readHeader(ch, file.toString());
        }
    }

    /**
     * Reads one {@code .npy} array from a stream (for example a zip entry), consuming it to its end.
     *
     * @param source name used in error messages
     */
    public static Tensor read(InputStream in, String source) throws IOException {
        ReadableByteChannel ch = Channels.newChannel(in);
        NpyHeader h = readHeader(ch, source);
        Tensor t = readData(ch, h, source);
        ByteBuffer extra = ByteBuffer.allocate(1);
        if (ch.read(extra) > 0) {
            t.close();
            throw new NpyFormatException(source + ": unexpected bytes after the data of " + h);
        }
        return t;
    }

    /** Writes a tensor as a version 1.0 (or 2.0 for very long headers) {@code .npy} file. */
    public static void write(Path file, Tensor t) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
            write(ch, t);
        }
    }

    /** Writes a tensor in {@code .npy} format to a stream (the stream is not closed). */
    public static void write(OutputStream out, Tensor t) throws IOException {
        write(Channels.newChannel(out), t);
        out.flush();
    }

    /** Writes a tensor in {@code .npy} format to a channel (the channel is not closed). */
    public static void write(WritableByteChannel ch, Tensor t) throws IOException {
        if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) throw new IOException("writing .npy needs a little-endian machine");
        if (!t.is_cpu()) throw new IllegalArgumentException("tensor must be on the CPU");
        String descr = descr(Tensors.type(t));
        writeFully(ch, ByteBuffer.wrap(header(descr, Tensors.shape(t))));
        if (t.numel() == 0) return;
        try (PointerScope s = new PointerScope()) {
            Tensor c = t.contiguous();
            BytePointer base = new BytePointer(c.data_ptr());
            long total = c.nbytes();
            for (long off = 0; off < total; off += CHUNK) {
                long len = Math.min(CHUNK, total - off);
                ByteBuffer bb = new BytePointer(base).position(off).limit(off + len).asByteBuffer();
                writeFully(ch, bb);
            }
        }
    }

    /** The numpy type string for a LibTorch type. */
    public static String descr(ScalarType type) {
        switch (type) {
            case Float: return "<f4";
            case Double: return "<f8";
            case Int: return "<i4";
            case Long: return "<i8";
            case Bool: return "|b1";
            case Byte: return "|u1";
            case Char: return "|i1";
            default: throw new IllegalArgumentException("no .npy type for " + type + " (supported: float32, float64, int32, int64, bool, uint8, int8)");
        }
    }

    static int itemSize(ScalarType type) {
        switch (type) {
            case Float: case Int: return 4;
            case Double: case Long: return 8;
            case Bool: case Byte: case Char: return 1;
            default: throw new IllegalArgumentException("unsupported type " + type);
        }
    }

    private static ScalarType typeOf(String descr, String source) throws NpyFormatException {
        if (descr.length() == 3 && "<>|=".indexOf(descr.charAt(0)) >= 0) {
            char order = descr.charAt(0);
            String kind = descr.substring(1);
            // One-byte types have no byte order; '=' is native order, little-endian on supported machines.
            switch (kind) {
                case "b1": return ScalarType.Bool;
                case "u1": return ScalarType.Byte;
                case "i1": return ScalarType.Char;
                default: break;
            }
            if (order == '>' && (kind.equals("f4") || kind.equals("f8") || kind.equals("i4") || kind.equals("i8"))) {
                throw new NpyFormatException(source + ": big-endian data ('" + descr + "') is not supported; convert with numpy's astype('<" + kind + "')");
            }
            if (order == '<' || order == '=') {
                switch (kind) {
                    case "f4": return ScalarType.Float;
                    case "f8": return ScalarType.Double;
                    case "i4": return ScalarType.Int;
                    case "i8": return ScalarType.Long;
                    default: break;
                }
            }
        }
        throw new NpyFormatException(source + ": unsupported dtype '" + descr + "' (supported: <f4 <f8 <i4 <i8 |b1 |u1 |i1)");
    }

    static byte[] header(String descr, long[] shape) {
        StringBuilder sb = new StringBuilder("{'descr': '").append(descr).append("', 'fortran_order': False, 'shape': (");
        for (int i = 0; i < shape.length; i++) {
            if (i > 0) sb.append(", ");
            sb.append(shape[i]);
        }
        if (shape.length == 1) sb.append(',');
        sb.append("), }");
        byte[] dict = sb.toString().getBytes(StandardCharsets.US_ASCII);
        int pre = dict.length + 1 + 10 > 65535 ? 12 : 10;
        int total = pre + dict.length + 1;
        int padded = (total + ALIGN - 1) / ALIGN * ALIGN;
        ByteBuffer b = ByteBuffer.allocate(padded).order(ByteOrder.LITTLE_ENDIAN);
        b.put(MAGIC).put((byte) (pre == 10 ? 1 : 2)).put((byte) 0);
        if (pre == 10) b.putShort((short) (padded - 10));
        else b.putInt(padded - 12);
        b.put(dict);
        while (b.position() < padded - 1) b.put((byte) ' ');
        b.put((byte) '\n');
        return b.array();
    }

    private static FileChannel open(Path file) throws IOException {
        try {
            return FileChannel.open(file, StandardOpenOption.READ);
        } catch (NoSuchFileException e) {
            throw new NoSuchFileException(file.toString(), null, "missing .npy file");
        }
    }

    private static NpyHeader readHeader(ReadableByteChannel ch, String source) throws IOException {
        ByteBuffer pre = ByteBuffer.allocate(10).order(ByteOrder.LITTLE_ENDIAN);
        readFully(ch, pre, source, "the .npy preamble");
        pre.flip();
        for (byte m : MAGIC) {
            if (pre.get() != m) throw new NpyFormatException(source + ": not a .npy file (bad magic string)");
        }
        int major = pre.get() & 0xff;
        int minor = pre.get() & 0xff;
        long headerLen;
        int preLen;
        if (major == 1) {
            headerLen = pre.getShort() & 0xffff;
            preLen = 10;
        } else if (major == 2 || major == 3) {
            ByteBuffer rest = ByteBuffer.allocate(2);
            readFully(ch, rest, source, "the .npy header length");
            rest.flip();
            ByteBuffer four = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
            four.put(pre.get()).put(pre.get()).put(rest.get()).put(rest.get()).flip();
            headerLen = four.getInt() & 0xffffffffL;
            preLen = 12;
        } else {
            throw new NpyFormatException(source + ": unsupported .npy version " + major + "." + minor);
        }
        if (headerLen > (1 << 24)) throw new NpyFormatException(source + ": implausible header length " + headerLen);
        ByteBuffer hb = ByteBuffer.allocate((int) headerLen);
        readFully(ch, hb, source, "the .npy header");
        String text = new String(hb.array(), major == 3 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1);
        return parseHeader(text, source, preLen + headerLen);
    }

    static NpyHeader parseHeader(String text, String source, long headerBytes) throws NpyFormatException {
        String descr = null;
        Boolean fortran = null;
        long[] shape = null;
        Parser p = new Parser(text, source);
        p.expect('{');
        while (true) {
            p.skipWs();
            if (p.peek() == '}') break;
            String key = p.string();
            p.skipWs();
            p.expect(':');
            p.skipWs();
            switch (key) {
                case "descr": descr = p.string(); break;
                case "fortran_order": fortran = p.bool(); break;
                case "shape": shape = p.tuple(); break;
                default: p.skipValue(); break;
            }
            p.skipWs();
            if (p.peek() == ',') p.pos++;
        }
        if (descr == null || fortran == null || shape == null) {
            throw new NpyFormatException(source + ": header lacks " + (descr == null ? "'descr'" : fortran == null ? "'fortran_order'" : "'shape'") + ": " + text.trim());
        }
        int nonTrivial = 0;
        for (long d : shape) {
            if (d < 0) throw new NpyFormatException(source + ": negative dimension in shape " + Arrays.toString(shape));
            if (d > 1) nonTrivial++;
        }
        if (fortran && nonTrivial > 1) throw new NpyFormatException(source + ": Fortran-order arrays are not supported; save with numpy.ascontiguousarray");
        ScalarType type = typeOf(descr, source);
        NpyHeader h = new NpyHeader(descr, type, shape, headerBytes);
        try {
            h.dataBytes();
        } catch (ArithmeticException e) {
            throw new NpyFormatException(source + ": shape " + Arrays.toString(shape) + " is too large");
        }
        return h;
    }

    private static Tensor readData(ReadableByteChannel ch, NpyHeader h, String source) throws IOException {
        Tensor t = Tensors.empty(h.type(), h.shape());
        long total = h.dataBytes();
        if (total == 0) return t;
        try {
            BytePointer base = new BytePointer(t.data_ptr());
            for (long off = 0; off < total; off += CHUNK) {
                long len = Math.min(CHUNK, total - off);
                ByteBuffer bb = new BytePointer(base).position(off).limit(off + len).asByteBuffer();
                while (bb.hasRemaining()) {
                    if (ch.read(bb) < 0) {
                        throw new NpyFormatException(source + ": truncated: header says " + h + " (" + total + " data bytes) but the data ends after "
                                + (off + bb.position()) + " bytes");
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            t.close();
            throw e;
        }
        return t;
    }

    private static void readFully(ReadableByteChannel ch, ByteBuffer b, String source, String what) throws IOException {
        while (b.hasRemaining()) {
            if (ch.read(b) < 0) {
                throw new NpyFormatException(source + ": truncated: ends inside " + what + (b.position() == 0 && what.contains("preamble") ? " (empty file)" : ""));
            }
        }
    }

    private static void writeFully(WritableByteChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) ch.write(b);
    }

    /** A parser for the Python literal dictionary of a .npy header. */
    private static final class Parser {
        final String s;
        final String source;
        int pos;

        Parser(String s, String source) {
            this.s = s;
            this.source = source;
        }

        char peek() throws NpyFormatException {
            if (pos >= s.length()) throw error("unexpected end of header");
            return s.charAt(pos);
        }

        void skipWs() {
            while (pos < s.length() && Character.isWhitespace(s.charAt(pos))) pos++;
        }

        void expect(char c) throws NpyFormatException {
            skipWs();
            if (peek() != c) throw error("expected '" + c + "'");
            pos++;
        }

        String string() throws NpyFormatException {
            char q = peek();
            if (q != '\'' && q != '"') throw error("expected a quoted string");
            int end = s.indexOf(q, pos + 1);
            if (end < 0) throw error("unterminated string");
            String r = s.substring(pos + 1, end);
            pos = end + 1;
            return r;
        }

        boolean bool() throws NpyFormatException {
            if (s.startsWith("True", pos)) { pos += 4; return true; }
            if (s.startsWith("False", pos)) { pos += 5; return false; }
            throw error("expected True or False");
        }

        long[] tuple() throws NpyFormatException {
            expect('(');
            List<Long> dims = new ArrayList<>();
            while (true) {
                skipWs();
                if (peek() == ')') { pos++; break; }
                int start = pos;
                while (pos < s.length() && Character.isDigit(s.charAt(pos))) pos++;
                if (start == pos) throw error("expected a dimension");
                try {
                    dims.add(Long.parseLong(s.substring(start, pos)));
                } catch (NumberFormatException e) {
                    throw error("dimension too large");
                }
                if (pos < s.length() && s.charAt(pos) == 'L') pos++;
                skipWs();
                if (peek() == ',') pos++;
            }
            long[] r = new long[dims.size()];
            for (int i = 0; i < r.length; i++) r[i] = dims.get(i);
            return r;
        }

        void skipValue() throws NpyFormatException {
            int depth = 0;
            while (true) {
                char c = peek();
                if (c == '\'' || c == '"') { string(); continue; }
                if (c == '(' || c == '[' || c == '{') depth++;
                if (c == ')' || c == ']' || c == '}') {
                    if (depth == 0) return;
                    depth--;
                }
                if (c == ',' && depth == 0) return;
                pos++;
            }
        }

        NpyFormatException error(String what) {
            return new NpyFormatException(source + ": malformed .npy header (" + what + " at offset " + pos + "): " + s.trim());
        }
    }
}
