package io.mn4j.communicator;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Dtypes and shapes carried in a message's tag, for Open MPI's tag range and MPI's least one. */
class ShapeTagTest {
    @ParameterizedTest
    @ValueSource(ints = {30, 15})
    void shapesThatFitComeBackFromTagAndByteCount(int tagBits) {
        ShapeTag tags = new ShapeTag(tagBits);
        long[][] shapes = {{}, {0}, {1}, {7}, {1 << 20}, {3, 5}, {100_000, 2}, {1, 1}, {2, 3, 4}, {9, 7, 15}};
        for (WireType type : WireType.values()) {
            for (long[] shape : shapes) {
                TensorHeader h = new TensorHeader(type, shape);
                int tag = tags.of(h);
                assertNotEquals(ShapeTag.HEADER, tag, h + " fits");
                assertNotEquals(ShapeTag.PAYLOAD, tag);
                assertTrue(tag > 0 && tag < 1 << tagBits, "tag " + tag + " in range");
                TensorHeader back = tags.read(tag, h.nbytes, "test", 0);
                assertEquals(type, back.type);
                assertArrayEquals(shape, back.shape, h.toString());
            }
        }
    }

    @Test
    void shapesThatDoNotFitNeedAHeader() {
        ShapeTag tags = new ShapeTag(30);
        long[][] shapes = {{0, 5}, {5, 0}, {2, 0, 3}, {1, 1L << 24}, {1, 4096, 1}, {2, 2, 2, 2}};
        for (long[] shape : shapes) {
            assertEquals(ShapeTag.HEADER, tags.of(new TensorHeader(WireType.FLOAT32, shape)));
        }
        assertNotEquals(ShapeTag.HEADER, tags.of(new TensorHeader(WireType.FLOAT32, new long[] {1, (1L << 24) - 1})));
        assertNotEquals(ShapeTag.HEADER, tags.of(new TensorHeader(WireType.FLOAT32, new long[] {1, 4095, 4095})));
    }

    @Test
    void aByteCountThatDoesNotMatchTheTagIsAnError() {
        ShapeTag tags = new ShapeTag(30);
        int matrix = tags.of(new TensorHeader(WireType.FLOAT64, new long[] {4, 3}));
        assertEquals(96, tags.read(matrix, 96, "test", 0).nbytes);
        String message = assertThrows(CommunicationException.class, () -> tags.read(matrix, 100, "alltoall", 2))
                .getMessage();
        assertTrue(message.startsWith("alltoall from rank 2: received a message that is not an mn4j tensor"), message);
        int scalar = tags.of(new TensorHeader(WireType.INT32, new long[0]));
        assertThrows(CommunicationException.class, () -> tags.read(scalar, 8, "test", 0));
        assertThrows(CommunicationException.class, () -> tags.read(15 << 26, 4, "test", 0), "no dtype 15");
    }
}
