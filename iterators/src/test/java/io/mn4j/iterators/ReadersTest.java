package io.mn4j.iterators;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.mn4j.tensor.Tensors;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.GZIPOutputStream;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReadersTest {
    @TempDir
    Path tmp;

    /** An IDX file of uint8 values 0, 1, 2, ... with the given shape; {@code cut} bytes dropped at the end. */
    static byte[] idxUbyte(int[] shape, int cut) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.write(new byte[] {0, 0, 0x08, (byte) shape.length});
        int n = 1;
        for (int s : shape) {
            out.writeInt(s);
            n *= s;
        }
        for (int i = 0; i < n - cut; i++) {
            out.write(i % 256);
        }
        return bytes.toByteArray();
    }

    static byte[] gzip(byte[] data) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (OutputStream out = new GZIPOutputStream(bytes)) {
            out.write(data);
        }
        return bytes.toByteArray();
    }

    @Test
    void readsPlainAndGzippedUbyteFiles() throws IOException {
        byte[] data = idxUbyte(new int[] {3, 2, 2}, 0);
        Path plain = Files.write(tmp.resolve("a-idx3-ubyte"), data);
        Path gz = Files.write(tmp.resolve("a-idx3-ubyte.gz"), gzip(data));
        for (Path p : new Path[] {plain, gz}) {
            Tensor t = IdxReader.read(p);
            assertEquals(torch.ScalarType.Byte.value, t.scalar_type().value);
            assertArrayEquals(new long[] {3, 2, 2}, t.sizes().vec().get());
            assertEquals(11, t.get(2).get(1).get(1).item_long());
        }
    }

    @Test
    void readsFilesLongerThanOneReadChunk() throws IOException {
        // 3 MiB of data: the reader copies it in 1 MiB chunks, each at its own offset
        byte[] data = idxUbyte(new int[] {3, 1024, 1024}, 0);
        Tensor t = IdxReader.read(Files.write(tmp.resolve("big.gz"), gzip(data)));
        assertArrayEquals(new long[] {3, 1024, 1024}, t.sizes().vec().get());
        for (long i : new long[] {0, 1048575, 1048576, 2097151, 2097152, 3145727}) {
            assertEquals(i % 256, t.reshape(-1).get(i).item_long(), "element " + i);
        }
        long expected = 0;
        for (int i = 0; i < 3 * 1024 * 1024; i++) {
            expected += i % 256;
        }
        assertEquals(expected, t.sum().item_long());
    }

    @Test
    void readsBigEndianIntsAndFloats() throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.write(new byte[] {0, 0, 0x0C, 1});
        out.writeInt(3);
        out.writeInt(-5);
        out.writeInt(70000);
        out.writeInt(7);
        Tensor ints = IdxReader.read(Files.write(tmp.resolve("i"), bytes.toByteArray()));
        assertEquals(torch.ScalarType.Int.value, ints.scalar_type().value);
        assertArrayEquals(new double[] {-5, 70000, 7}, Tensors.toDoubleArray(ints));
        bytes.reset();
        out.write(new byte[] {0, 0, 0x0D, 1});
        out.writeInt(2);
        out.writeFloat(1.5f);
        out.writeFloat(-0.25f);
        Tensor floats = IdxReader.read(Files.write(tmp.resolve("f"), bytes.toByteArray()));
        assertEquals(torch.ScalarType.Float.value, floats.scalar_type().value);
        assertArrayEquals(new double[] {1.5, -0.25}, Tensors.toDoubleArray(floats));
    }

    @Test
    void truncatedFilesAreReported() throws IOException {
        byte[] cut = idxUbyte(new int[] {4, 28, 28}, 100);
        Path plain = Files.write(tmp.resolve("cut"), cut);
        DatasetException e = assertThrows(DatasetException.class, () -> IdxReader.read(plain));
        assertTrue(e.getMessage().contains("truncated") && e.getMessage().contains("3136 bytes")
                && e.getMessage().contains("3036"), e.getMessage());
        // a gzip stream cut in the middle
        byte[] gz = gzip(idxUbyte(new int[] {4, 28, 28}, 0));
        Path gzCut = Files.write(tmp.resolve("cut.gz"), Arrays.copyOf(gz, gz.length / 2));
        DatasetException g = assertThrows(DatasetException.class, () -> IdxReader.read(gzCut));
        assertTrue(g.getMessage().contains("truncated"), g.getMessage());
        Path header = Files.write(tmp.resolve("hdr"), Arrays.copyOf(cut, 6));
        DatasetException h = assertThrows(DatasetException.class, () -> IdxReader.read(header));
        assertTrue(h.getMessage().contains("truncated inside its header"), h.getMessage());
    }

    @Test
    void missingAndForeignFilesAreReported() throws IOException {
        DatasetException e = assertThrows(DatasetException.class, () -> IdxReader.read(tmp.resolve("nope")));
        assertTrue(e.getMessage().contains("not found"), e.getMessage());
        Path text = Files.writeString(tmp.resolve("text"), "hello world");
        DatasetException f = assertThrows(DatasetException.class, () -> IdxReader.read(text));
        assertTrue(f.getMessage().contains("not an IDX file"), f.getMessage());
    }

    @Test
    void fashionMnistDirectoryProblemsAreReported() throws IOException {
        Files.write(tmp.resolve("t10k-images-idx3-ubyte"), idxUbyte(new int[] {5, 28, 28}, 0));
        DatasetException e = assertThrows(DatasetException.class, () -> FashionMnist.load(tmp, false));
        assertTrue(e.getMessage().contains("t10k-labels-idx1-ubyte[.gz] not found")
                && e.getMessage().contains("t10k-images-idx3-ubyte"), e.getMessage());
        Files.write(tmp.resolve("t10k-labels-idx1-ubyte.gz"), gzip(idxUbyte(new int[] {4}, 0)));
        DatasetException m = assertThrows(DatasetException.class, () -> FashionMnist.load(tmp, false));
        assertTrue(m.getMessage().contains("5 images") && m.getMessage().contains("4 labels"), m.getMessage());
        Files.write(tmp.resolve("t10k-labels-idx1-ubyte.gz"), gzip(idxUbyte(new int[] {5}, 0)));
        TensorDataset ok = FashionMnist.load(tmp, false);
        assertEquals(5, ok.size());
        assertEquals(torch.ScalarType.Float.value, ok.field(0).scalar_type().value);
        assertArrayEquals(new long[] {5, 784}, ok.field(0).sizes().vec().get());
        assertEquals(torch.ScalarType.Long.value, ok.field(1).scalar_type().value);
        assertEquals(3.0 / 255, ok.field(0).get(0).get(3).item_double(), 1e-6);
    }

    @Test
    void theInstalledFashionMnistTestSplit() {
        Path dir = Path.of(FashionMnist.DEFAULT_DIR);
        assumeTrue(Files.isDirectory(dir), "Debian's dataset-fashion-mnist is not installed");
        TensorDataset test = FashionMnist.load(dir, false);
        assertEquals(10000, test.size());
        assertEquals(0.0, test.field(0).min().item_double());
        assertEquals(1.0, test.field(0).max().item_double());
        // the test split is balanced: 1000 images per class
        Tensor counts = torch.bincount(test.field(1));
        assertArrayEquals(new double[] {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000},
                Tensors.toDoubleArray(counts));
    }

    @Test
    void csvWithHeaderLabelAndComments() throws IOException {
        Path f = Files.writeString(tmp.resolve("d.csv"),
                "# a comment\nsepal,petal,\"class\"\n1.5, 2, 0\n\n3,-4e-1,\"2\"\n");
        TensorDataset ds = CsvReader.builder().labelColumn(-1).read(f);
        assertEquals(2, ds.size());
        assertArrayEquals(new double[] {1.5, 2, 3, -0.4}, Tensors.toDoubleArray(ds.field(0)), 1e-6);
        assertEquals(torch.ScalarType.Float.value, ds.field(0).scalar_type().value);
        assertEquals(torch.ScalarType.Long.value, ds.field(1).scalar_type().value);
        assertArrayEquals(new double[] {0, 2}, Tensors.toDoubleArray(ds.field(1)));
        TensorDataset all = CsvReader.builder().featureType(torch.ScalarType.Double).read(f);
        assertEquals(1, all.numFields());
        assertArrayEquals(new long[] {2, 3}, all.field(0).sizes().vec().get());
    }

    @Test
    void csvErrorsNameLineAndColumn() throws IOException {
        Path ragged = Files.writeString(tmp.resolve("r.csv"), "1,2,3\n4,5\n");
        DatasetException e = assertThrows(DatasetException.class, () -> CsvReader.builder().read(ragged));
        assertTrue(e.getMessage().contains("line 2: expected 3 columns, found 2"), e.getMessage());
        Path bad = Files.writeString(tmp.resolve("b.csv"), "1,2\n3,x\n");
        DatasetException b = assertThrows(DatasetException.class, () -> CsvReader.builder().read(bad));
        assertTrue(b.getMessage().contains("line 2, column 2: 'x' is not a number"), b.getMessage());
        Path frac = Files.writeString(tmp.resolve("l.csv"), "1,0.5\n");
        DatasetException l = assertThrows(DatasetException.class, () -> CsvReader.builder().labelColumn(1).read(frac));
        assertTrue(l.getMessage().contains("not an integer"), l.getMessage());
        assertThrows(DatasetException.class, () -> CsvReader.builder().read(tmp.resolve("missing.csv")));
        assertThrows(DatasetException.class, () -> CsvReader.builder().labelColumn(5).read(frac));
    }
}
