package io.mn4j.gnn.io;

import static io.mn4j.gnn.io.LabelCheckTest.assertMessage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.gnn.graph.Graph;
import io.mn4j.gnn.graph.SyntheticGraphs;
import io.mn4j.gnn.partition.PartitionData;
import io.mn4j.gnn.partition.PartitionReader;
import io.mn4j.gnn.partition.PartitionWriter;
import io.mn4j.gnn.partition.RangePartitioner;
import io.mn4j.tensor.Tensors;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** .npy files as memory maps: the same values as reading them, the same refusals, unmapped on close, and outside JavaCPP's count. */
class MappedNpyTest {
    @TempDir
    Path tmp;

    @Test
    void mapsWhatReadReads() throws Exception {
        try (PointerScope s = new PointerScope()) {
            torch.manual_seed(3);
            Tensor[] arrays = {torch.randn(37, 5), torch.randn(4, 3, 2).to(ScalarType.Double), torch.arange(new Scalar(11)),
                torch.randn(9).gt(new Scalar(0)), Tensors.empty(ScalarType.Float, 0, 4), Tensors.ints(new int[] {7, -1, 3})};
            for (int k = 0; k < arrays.length; k++) {
                Path f = tmp.resolve("a" + k + ".npy");
                Npy.write(f, arrays[k]);
                Tensor mapped = MappedNpy.map(f);
                Tensor read = Npy.read(f);
                assertEquals(Tensors.shapeString(read), Tensors.shapeString(mapped), f.toString());
                assertEquals(Tensors.type(read), Tensors.type(mapped), f.toString());
                assertTrue(read.equal(mapped), f + ": the same values");
                assertTrue(read.size(0) == 0 || read.index_select(0, Tensors.longs(0)).equal(mapped.index_select(0, Tensors.longs(0))));
            }
        }
    }

    @Test
    void refusesWhatReadRefuses() throws Exception {
        Path f = tmp.resolve("cut.npy");
        try (PointerScope s = new PointerScope()) {
            Npy.write(f, torch.randn(100, 8));
        }
        try (RandomAccessFile r = new RandomAccessFile(f.toFile(), "rw")) {
            r.setLength(r.length() - 4);
        }
        assertMessage(assertThrows(NpyFormatException.class, () -> MappedNpy.map(f)), f.toString(), "truncated");
        try (RandomAccessFile r = new RandomAccessFile(f.toFile(), "rw")) {
            r.setLength(r.length() + 12);
        }
        assertMessage(assertThrows(NpyFormatException.class, () -> MappedNpy.map(f)), "8 unexpected bytes after the data");
        Files.write(f, new byte[] {1, 2, 3});
        assertThrows(NpyFormatException.class, () -> MappedNpy.map(f));
    }

    /** Closing the tensor (and its views) unmaps the file, and touched pages are file pages, which JavaCPP's limit does not count. */
    @Test
    void closingUnmapsAndTouchedPagesAreNotCountedAsPhysicalBytes() throws Exception {
        Path f = tmp.resolve("big.npy");
        long rows = 1 << 16, width = 256; // 64 MiB
        try (PointerScope s = new PointerScope()) {
            Npy.write(f, torch.ones(rows, width));
        }
        long anon0 = Pointer.physicalBytes();
        long rss0 = rssBytes();
        Tensor mapped = MappedNpy.map(f);
        assertTrue(mapped(f), "mapped while the tensor is open");
        double sum;
        try (PointerScope s = new PointerScope()) {
            Tensor view = mapped.narrow(0, 1, rows - 1);
            sum = view.sum().item_double() + mapped.get(0).sum().item_double();
        }
        long anon = Pointer.physicalBytes() - anon0;
        long rss = rssBytes() - rss0;
        assertEquals((double) rows * width, sum, "every row read");
        assertTrue(rss > 48L << 20, "the 64 MiB of pages read are resident: RSS grew by " + rss);
        assertTrue(anon < 24L << 20, "but they are file pages: JavaCPP's physicalBytes grew by " + anon + " only");
        mapped.close();
        assertFalse(mapped(f), "unmapped once the tensor and its views are closed");
    }

    @Test
    void partitionsLoadWithMappedFeatures() throws Exception {
        Path dir = tmp.resolve("parts");
        try (Graph g = SyntheticGraphs.plantedPartition(500, 4, 3, 6, 1)) {
            PartitionWriter.write(dir, g, new RangePartitioner().partition(g, 2, 0), 2, "range", 0);
        }
        for (int k = 0; k < 2; k++) {
            Path file = dir.resolve(PartitionWriter.partDir(k)).resolve("features.npy");
            try (PartitionData loaded = PartitionReader.load(dir, k, 2); PartitionData mapped = PartitionReader.load(dir, k, 2, true)) {
                assertTrue(loaded.features().equal(mapped.features()));
                assertTrue(loaded.labels().equal(mapped.labels()));
                assertTrue(mapped(file), "part " + k + "'s features are mapped");
            }
            assertFalse(mapped(file), "closing the partition unmaps its features");
        }
    }

    private static boolean mapped(Path file) throws IOException {
        String real = file.toRealPath().toString();
        return Files.readAllLines(Path.of("/proc/self/maps")).stream().anyMatch(l -> l.endsWith(" " + real));
    }

    private static long rssBytes() throws IOException {
        for (String l : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (l.startsWith("VmRSS:")) {
                return Long.parseLong(l.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        throw new IllegalStateException("no VmRSS");
    }
}
