package io.mn4j.iterators;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.NoSuchElementException;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;

class SerialIteratorTest {
    static TensorDataset ramp(int n) {
        Tensor x = torch.arange(new Scalar(n * 3L)).reshape(n, 3).to(torch.ScalarType.Float);
        Tensor y = torch.arange(new Scalar(n)).to(torch.ScalarType.Byte);
        return new TensorDataset(x, y);
    }

    @Test
    void inOrderWithRepeatWrapsAroundLikeChainer() {
        SerialIterator it = new SerialIterator(ramp(10), 4, true);
        assertEquals(-1, it.previousEpochDetail());
        assertArrayEquals(new long[] {0, 1, 2, 3}, it.nextIndices());
        assertFalse(it.isNewEpoch());
        assertEquals(0.4, it.epochDetail(), 1e-12);
        assertArrayEquals(new long[] {4, 5, 6, 7}, it.nextIndices());
        assertEquals(0.4, it.previousEpochDetail(), 1e-12);
        assertArrayEquals(new long[] {8, 9, 0, 1}, it.nextIndices());
        assertTrue(it.isNewEpoch());
        assertEquals(1, it.epoch());
        assertEquals(1.2, it.epochDetail(), 1e-12);
        assertArrayEquals(new long[] {2, 3, 4, 5}, it.nextIndices());
        assertFalse(it.isNewEpoch());
        assertArrayEquals(new long[] {6, 7, 8, 9}, it.nextIndices());
        assertTrue(it.isNewEpoch());
        assertEquals(2, it.epoch());
        assertEquals(2.0, it.epochDetail(), 1e-12);
        assertEquals(5, it.iteration());
        assertEquals(3, it.batchesPerEpoch());
    }

    @Test
    void withoutRepeatTheLastBatchIsShortAndThenItEnds() {
        SerialIterator it = new SerialIterator(ramp(10), 4, false);
        List<long[]> got = new ArrayList<>();
        while (it.hasNext()) {
            got.add(it.nextIndices());
        }
        assertEquals(3, got.size());
        assertArrayEquals(new long[] {8, 9}, got.get(2));
        assertTrue(it.isNewEpoch());
        assertEquals(1.0, it.epochDetail(), 1e-12);
        assertThrows(NoSuchElementException.class, it::next);
        it.reset();
        assertTrue(it.hasNext());
        assertArrayEquals(new long[] {0, 1, 2, 3}, it.nextIndices());
    }

    @Test
    void batchesHoldTheIndexedRowsWithTheirDtypes() {
        TensorDataset ds = ramp(10);
        SerialIterator it = new SerialIterator(ds, 4, true);
        it.next();
        it.next();
        Batch b = it.next();
        assertEquals(4, b.size());
        assertEquals(torch.ScalarType.Float.value, b.field(0).scalar_type().value);
        assertEquals(torch.ScalarType.Byte.value, b.field(1).scalar_type().value);
        assertArrayEquals(new long[] {4, 3}, b.field(0).sizes().vec().get());
        assertArrayEquals(new double[] {8, 9, 0, 1}, Tensors.toDoubleArray(b.field(1)));
        assertArrayEquals(new double[] {24, 25, 26, 27, 28, 29, 0, 1, 2, 3, 4, 5}, Tensors.toDoubleArray(b.field(0)));
    }

    @Test
    void shuffledEpochsArePermutationsDrawnFromTheSeed() {
        SerialIterator a = new SerialIterator(ramp(10), 4, true, true, 42);
        SerialIterator b = new SerialIterator(ramp(10), 4, true, true, 42);
        SerialIterator c = new SerialIterator(ramp(10), 4, true, true, 43);
        int[] seen = new int[10];
        List<Long> sa = new ArrayList<>();
        List<Long> sc = new ArrayList<>();
        for (int k = 0; k < 5; k++) { // 20 indices = exactly two epochs
            long[] ia = a.nextIndices();
            assertArrayEquals(ia, b.nextIndices());
            for (long i : ia) {
                seen[(int) i]++;
                sa.add(i);
            }
            for (long i : c.nextIndices()) {
                sc.add(i);
            }
        }
        int[] twice = new int[10];
        Arrays.fill(twice, 2);
        assertArrayEquals(twice, seen);
        assertNotEquals(sa, sc);
        assertEquals(2, a.epoch());
        // the two epochs use different orders
        assertNotEquals(sa.subList(0, 10), sa.subList(10, 20));
        // reset restarts the same sequence
        a.reset();
        List<Long> again = new ArrayList<>();
        for (int k = 0; k < 5; k++) {
            for (long i : a.nextIndices()) {
                again.add(i);
            }
        }
        assertEquals(sa, again);
    }

    @Test
    void aBatchLargerThanTheDatasetIsAClearError() {
        DatasetException e = assertThrows(DatasetException.class, () -> new SerialIterator(ramp(10), 11, true));
        assertTrue(e.getMessage().contains("batch size 11 is larger than the data set (10 examples)"), e.getMessage());
        assertThrows(DatasetException.class, () -> new SerialIterator(ramp(10), 0, true));
    }

    @Test
    void emptyDatasetsKeepCountsWithoutData() {
        TensorDataset empty = Datasets.createEmptyDataset(ramp(10));
        assertEquals(10, empty.size());
        SerialIterator it = new SerialIterator(empty, 4, true);
        Batch b = it.next();
        assertEquals(4, b.size());
        assertEquals(0, b.numFields());
        it.next();
        it.next();
        assertTrue(it.isNewEpoch());
    }
}
