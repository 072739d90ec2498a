package io.mn4j.gnn.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.tensor.Tensors;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NpyTest {
    @TempDir
    Path dir;

    @Test
    void roundTripsEveryTypeAndShape() throws Exception {
        ScalarType[] types = {ScalarType.Float, ScalarType.Double, ScalarType.Int, ScalarType.Long, ScalarType.Bool, ScalarType.Byte, ScalarType.Char};
        long[][] shapes = {{}, {0}, {7}, {3, 5}, {2, 0, 4}, {2, 3, 4}};
        try (PointerScope s = new PointerScope()) {
            int i = 0;
            for (ScalarType t : types) {
                for (long[] shape : shapes) {
                    Tensor src = torch.randn(shape, new TensorOptions(ScalarType.Double)).mul(new Scalar(50)).to(t);
                    Path f = dir.resolve("a" + i++ + ".npy");
                    Npy.write(f, src);
                    assertEquals(0, Files.size(f) - Npy.readHeader(f).headerBytes() - src.nbytes(), "no padding after the data");
                    assertEquals(0, Npy.readHeader(f).headerBytes() % 64, "header aligned to 64 bytes like numpy");
                    Tensor back = Npy.read(f);
                    assertEquals(t, Tensors.type(back));
                    assertArrayEquals(shape, Tensors.shape(back), t + " " + Arrays.toString(shape));
                    assertTrue(back.equal(src), t + " " + Arrays.toString(shape));
                    // The same through a stream.
                    ByteArrayOutputStream bos = new ByteArrayOutputStream();
                    Npy.write(bos, src);
                    assertTrue(Npy.read(new ByteArrayInputStream(bos.toByteArray()), "stream").equal(src));
                }
            }
            // Non-contiguous input is written in logical (C) order.
            Tensor m = torch.arange(new Scalar(6)).view(2, 3).t();
            Path f = dir.resolve("t.npy");
            Npy.write(f, m);
            assertEquals("[0, 3, 1, 4, 2, 5]", Arrays.toString(Tensors.toLongArray(Npy.read(f))));
        }
    }

    @Test
    void readsNumpyHeaderVariants() throws Exception {
        // Headers as written by various numpy versions: double quotes, Python 2 longs, version 2.0, extra keys.
        String[] dicts = {"{\"descr\": \"<i8\", \"fortran_order\": False, \"shape\": (2,)}", "{'descr': '<i8', 'fortran_order': False, 'shape': (2L,), }",
                "{'shape': (2,), 'fortran_order': True, 'descr': '<i8', 'extra': [1, (2, 3)]}"};
        for (String d : dicts) {
            for (int version : new int[] {1, 2, 3}) {
                byte[] file = npy(version, d, new byte[] {1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0});
                try (PointerScope s = new PointerScope()) {
                    Tensor t = Npy.read(new ByteArrayInputStream(file), "x");
                    assertEquals("[1, 2]", Arrays.toString(Tensors.toLongArray(t)), d);
                }
            }
        }
    }

    @Test
    void rejectsCorruptAndUnsupportedFiles() throws Exception {
        byte[] data8 = new byte[8];
        assertError(npy(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", data8), "unsupported dtype '<c8'");
        assertError(npy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", data8), "big-endian");
        assertError(npy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", new byte[16]), "Fortran-order");
        assertError(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", data8), "truncated");
        assertError(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", data8), "unexpected bytes after the data");
        assertError(npy(1, "{'descr': '<f4', 'fortran_order': False, }", data8), "lacks 'shape'");
        assertError(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,", data8), "malformed");
        assertError(npy(7, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", data8), "unsupported .npy version 7");
        assertError("PK\u0003\u0004 this is a zip".getBytes(StandardCharsets.ISO_8859_1), "bad magic");
        assertError(new byte[0], "truncated");
        byte[] whole = npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }", new byte[32]);
        assertError(Arrays.copyOf(whole, 20), "truncated");
        assertError(Arrays.copyOf(whole, whole.length - 3), "truncated: header says <f8 [4] (32 data bytes) but the file has only 29");
    }

    private void assertError(byte[] content, String expected) throws Exception {
        Path f = Files.write(dir.resolve("bad.npy"), content);
        NpyFormatException e = assertThrows(NpyFormatException.class, () -> Npy.read(f));
        assertTrue(e.getMessage().contains(expected) && e.getMessage().contains(f.toString()), "message: " + e.getMessage());
        assertThrows(NpyFormatException.class, () -> Npy.read(new ByteArrayInputStream(content), "s"));
    }

    /** A .npy file with the given version, header dictionary and data. */
    static byte[] npy(int version, String dict, byte[] data) {
        byte[] d = (dict + "\n").getBytes(StandardCharsets.ISO_8859_1);
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', (byte) version, 0});
        if (version == 1 || version == 7) {
            b.write(d.length & 0xff);
            b.write(d.length >> 8);
        } else {
            b.writeBytes(new byte[] {(byte) d.length, (byte) (d.length >> 8), 0, 0});
        }
        b.writeBytes(d);
        b.writeBytes(data);
        return b.toByteArray();
    }
}
