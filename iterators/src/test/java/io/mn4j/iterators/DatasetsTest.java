package io.mn4j.iterators;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.tensor.Tensors;
import java.util.List;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;

class DatasetsTest {
    @Test
    void chainerMnOverlappingWindows() {
        long[][] b = Datasets.partitionBounds(10, 4, true);
        assertArrayEquals(new long[][] {{0, 3}, {2, 5}, {5, 8}, {7, 10}}, b);
        long[][] d = Datasets.partitionBounds(10, 4, false);
        assertArrayEquals(new long[][] {{0, 2}, {2, 5}, {5, 7}, {7, 10}}, d);
    }

    @Test
    void partitionsCoverTheDataForManySizes() {
        for (int n = 0; n <= 40; n++) {
            for (int p = 1; p <= 7; p++) {
                long[][] eq = Datasets.partitionBounds(n, p, true);
                long[][] dj = Datasets.partitionBounds(n, p, false);
                long sub = (n + p - 1) / p;
                boolean[] covered = new boolean[n];
                for (int i = 0; i < p; i++) {
                    assertEquals(sub, eq[i][1] - eq[i][0], "n=" + n + " p=" + p);
                    assertTrue(eq[i][1] <= n && eq[i][0] >= 0);
                    for (long k = eq[i][0]; k < eq[i][1]; k++) {
                        covered[(int) k] = true;
                    }
                    assertEquals(i == 0 ? 0 : dj[i - 1][1], dj[i][0]);
                }
                assertEquals(n, dj[p - 1][1]);
                for (boolean c : covered) {
                    assertTrue(c, "n=" + n + " p=" + p);
                }
            }
        }
    }

    @Test
    void subDatasetFollowsTheOrder() {
        Tensor x = torch.arange(new Scalar(10)).to(torch.ScalarType.Int);
        TensorDataset ds = new TensorDataset(x);
        long[] order = Datasets.shuffledOrder(10, 7);
        SubDataset<List<Tensor>> sub = SubDataset.range(ds, 2, 5, order);
        assertEquals(3, sub.size());
        assertEquals(order[3], sub.get(1).get(0).item_long());
        Batch b = sub.batch(new long[] {2, 0});
        assertArrayEquals(new double[] {order[4], order[2]}, Tensors.toDoubleArray(b.field(0)));
        assertEquals(torch.ScalarType.Int.value, b.field(0).scalar_type().value);
        assertThrows(IndexOutOfBoundsException.class, () -> sub.get(3));
    }

    @Test
    void collateStacksListsAndRejectsMismatches() {
        Tensor a = torch.ones(2, 3);
        Tensor b = torch.zeros(2, 3);
        Batch batch = Batch.collate(List.of(List.of(a, torch.tensor(1L)), List.of(b, torch.tensor(2L))));
        assertEquals(2, batch.size());
        assertArrayEquals(new long[] {2, 2, 3}, batch.field(0).sizes().vec().get());
        assertArrayEquals(new double[] {1, 2}, Tensors.toDoubleArray(batch.field(1)));
        DatasetException e = assertThrows(DatasetException.class,
                () -> Batch.collate(List.of(a, torch.ones(3, 2))));
        assertTrue(e.getMessage().contains("item 1"), e.getMessage());
    }

    @Test
    void tensorDatasetChecksItsFields() {
        assertThrows(IllegalArgumentException.class, () -> new TensorDataset(torch.ones(3, 2), torch.ones(4)));
        TensorDataset ds = new TensorDataset(torch.arange(new Scalar(6)).reshape(3, 2), torch.ones(3));
        assertEquals(3, ds.size());
        assertEquals(2, ds.slice(1, 3).size());
        assertEquals(2.0, ds.slice(1, 3).get(0).get(0).get(0).item_double());
        assertThrows(IndexOutOfBoundsException.class, () -> ds.batch(new long[] {0, 3}));
    }

    @Test
    void metricsCombineBySumsAndCounts() {
        Metrics a = new Metrics().addMean("acc", 1.0, 1);
        Metrics b = new Metrics().addMean("acc", 0.5, 3).addMean("loss", 2.0, 3);
        Metrics t = new Metrics().addAll(a).addAll(b);
        assertEquals(2.5 / 4, t.mean("acc"), 1e-12);
        assertEquals(4, t.count("acc"));
        assertEquals(2.0, t.mean("loss"), 1e-12);
        assertTrue(Double.isNaN(new Metrics().mean("x")));
    }
}
