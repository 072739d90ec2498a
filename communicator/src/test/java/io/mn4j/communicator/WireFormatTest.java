package io.mn4j.communicator;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;

/** The parts of the wire format that need no MPI: headers, byte views of tensors, objects. */
class WireFormatTest {
    private static Tensor bytes(long n) {
        return torch.arange(new Scalar(n)).to(ScalarType.Byte);
    }

    @Test
    void sliceStartsAtItsOffset() {
        // MPI reads a direct buffer from its address, ignoring position: a chunk's buffer must begin
        // at the chunk (regression: every chunk used to alias the first one).
        Tensor t = bytes(64);
        ByteBuffer s = TensorBytes.slice(t, 40, 16);
        assertEquals(0, s.position());
        assertEquals(16, s.capacity());
        assertEquals(40, s.get(0));
        assertEquals(55, s.get(15));
        s.put(1, (byte) 99);
        assertEquals(99, t.get(41).item_long());
        assertEquals(40, t.get(40).item_long());
    }

    @Test
    void copyInAndOutAtOffsets() {
        Tensor src = torch.arange(new Scalar(6L)).to(ScalarType.Int);
        ByteBuffer buf = ByteBuffer.allocateDirect(64).order(ByteOrder.nativeOrder());
        TensorBytes.copyOut(src, buf, 8, src.nbytes());
        assertEquals(0, buf.getInt(8));
        assertEquals(5, buf.getInt(8 + 20));
        Tensor dst = torch.empty(new long[] {6}, new TensorOptions(ScalarType.Int), null);
        TensorBytes.copyIn(dst, buf, 8, dst.nbytes());
        assertTrue(dst.equal(src));
        // Zero bytes: the tensor's data pointer (null for zero-size tensors) is never touched.
        Tensor none = torch.empty(new long[] {0, 3}, new TensorOptions(ScalarType.Float), null);
        TensorBytes.copyIn(none, buf, 0, 0);
        TensorBytes.copyOut(none, buf, 0, 0);
    }

    @Test
    void wireReadyOnlyForContiguousCpuTensors() {
        Tensor t = bytes(12).reshape(3, 4);
        assertTrue(TensorBytes.isWireReady(t));
        assertTrue(TensorBytes.wireReady(t) == t);
        Tensor view = t.t();
        assertFalse(TensorBytes.isWireReady(view));
        Tensor ready = TensorBytes.wireReady(view);
        assertTrue(ready.is_contiguous());
        assertTrue(ready.equal(view));
    }

    @Test
    void headerRoundTripsEveryDtypeAndShape() {
        long[][] shapes = {{}, {0, 3}, {2, 3}, {1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2}};
        for (WireType w : WireType.values()) {
            for (long[] shape : shapes) {
                Tensor t = torch.empty(shape, new TensorOptions(w.scalarType), null);
                TensorHeader h = TensorHeader.of(t);
                LongBuffer buf = LongBuffer.allocate(3 * TensorHeader.LONGS);
                h.write(buf, TensorHeader.LONGS);
                TensorHeader back = TensorHeader.read(buf, TensorHeader.LONGS, "test");
                assertEquals(w, back.type);
                assertArrayEquals(shape, back.shape);
                assertEquals(t.nbytes(), back.nbytes);
                assertEquals(h.fingerprint(), back.fingerprint());
                assertTrue(back.matches(t));
                Tensor made = back.allocate();
                assertEquals(w.scalarType.value, made.scalar_type().value);
                assertArrayEquals(shape, made.sizes().vec().get());
            }
        }
    }

    @Test
    void headerCarriesTheSendersChunkSize() {
        TensorHeader h = TensorHeader.of(torch.empty(new long[] {40, 50}, new TensorOptions(ScalarType.Float), null));
        LongBuffer buf = LongBuffer.allocate(TensorHeader.LONGS);
        h.write(buf, 0, 64);
        assertEquals(64, TensorHeader.chunkBytes(buf, 0, "test"));
        assertFalse(TensorHeader.isInvalid(buf, 0));
        assertArrayEquals(h.shape, TensorHeader.read(buf, 0, "test").shape);
        // A header written without one (0) cannot drive a payload loop: corrupt, not an endless loop.
        h.write(buf, 0);
        CommunicationException e = assertThrows(CommunicationException.class,
                () -> TensorHeader.chunkBytes(buf, 0, "recv (rank 1 from rank 0, tag 3)"));
        assertTrue(e.getMessage().contains("recv (rank 1 from rank 0, tag 3)"), e.getMessage());
        assertTrue(e.getMessage().contains("chunk size of 0"), e.getMessage());
    }

    @Test
    void headersTellDtypesAndShapesApart() {
        Tensor a = torch.empty(new long[] {2, 3}, new TensorOptions(ScalarType.Float), null);
        Tensor b = torch.empty(new long[] {3, 2}, new TensorOptions(ScalarType.Float), null);
        Tensor c = torch.empty(new long[] {2, 3}, new TensorOptions(ScalarType.Int), null);
        Tensor d = torch.empty(new long[] {6}, new TensorOptions(ScalarType.Float), null);
        List<Long> prints = new ArrayList<>();
        for (Tensor t : new Tensor[] {a, b, c, d}) {
            prints.add(TensorHeader.of(t).fingerprint());
        }
        assertEquals(4, prints.stream().distinct().count());
        assertFalse(TensorHeader.of(a).matches(b));
        assertFalse(TensorHeader.of(a).matches(c));
        assertEquals("float32[2, 3]", TensorHeader.describe(a));
        assertEquals("int32[2, 3]", TensorHeader.describe(c));
    }

    @Test
    void badHeadersAndDtypesAreNamed() {
        LongBuffer junk = LongBuffer.allocate(TensorHeader.LONGS);
        junk.put(0, 12345);
        CommunicationException e = assertThrows(CommunicationException.class,
                () -> TensorHeader.read(junk, 0, "recv (rank 1 from rank 0, tag 3)"));
        assertTrue(e.getMessage().contains("recv (rank 1 from rank 0, tag 3)"), e.getMessage());
        assertTrue(e.getMessage().contains("not an mn4j tensor header"), e.getMessage());

        Tensor tooMany = torch.empty(new long[] {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
                new TensorOptions(ScalarType.Float), null);
        e = assertThrows(CommunicationException.class, () -> TensorHeader.of(tooMany));
        assertTrue(e.getMessage().contains("13 dimensions"), e.getMessage());

        Tensor shorts = torch.empty(new long[] {2}, new TensorOptions(ScalarType.Short), null);
        e = assertThrows(CommunicationException.class, () -> TensorHeader.of(shorts));
        assertTrue(e.getMessage().contains("cannot be communicated"), e.getMessage());
        assertTrue(e.getMessage().contains("bfloat16"), e.getMessage());
        assertThrows(CommunicationException.class, () -> WireType.ofCode(99));
    }

    @Test
    void wireCodesAreStableAndDistinct() {
        // The codes are the protocol: changing one breaks jobs that mix versions.
        String[] labels = {"float32", "float64", "int32", "int64", "int8", "uint8", "bool", "float16", "bfloat16"};
        for (int i = 0; i < labels.length; i++) {
            WireType w = WireType.ofCode(i + 1);
            assertEquals(labels[i], w.label);
            assertEquals(w, WireType.of(w.scalarType));
        }
        for (WireType w : WireType.values()) {
            Tensor t = torch.empty(new long[] {1}, new TensorOptions(w.scalarType), null);
            assertEquals(t.element_size(), w.elementSize, w.label);
            if (w.reduceAs != null) {
                assertNotEquals(w.scalarType.value, w.reduceAs.value);
            }
        }
    }

    @Test
    void objectsRoundTrip() {
        Map<String, List<Integer>> m = new TreeMap<>();
        m.put("a", List.of(1, 2, 3));
        m.put("big", new ArrayList<>(Collections.nCopies(1000, 7)));
        Tensor t = ObjectCodec.encode((Serializable) m);
        assertEquals(ScalarType.Byte.value, t.scalar_type().value);
        Map<String, List<Integer>> back = ObjectCodec.decode(t, "test");
        assertEquals(m, back);
        // A non-contiguous uint8 view decodes too.
        Tensor twice = torch.stack(new TensorVector(t, t), 1);
        assertEquals(m, ObjectCodec.decode(twice.select(1, 1), "test"));
        CommunicationException e = assertThrows(CommunicationException.class,
                () -> ObjectCodec.decode(bytes(10), "recvObj (rank 0 from rank 1, tag 3)"));
        assertTrue(e.getMessage().startsWith("recvObj (rank 0 from rank 1, tag 3): cannot deserialize"), e.getMessage());
    }
}
