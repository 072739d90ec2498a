package io.mn4j.gnn.io;

import io.mn4j.tensor.Tensors;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * Reads a node-feature CSV (OGB's {@code node-feat.csv.gz}: one row of f numbers per node) a block
 * of rows at a time, straight into a float32 tensor ({@link #read}) or into any consumer
 * ({@link #forEachBlock}): the rows never exist as Java strings or as one Java array (papers100M's
 * would not fit one).
 */
final class OgbFeatures {
    /** Floats parsed before they are handed on. */
    private static final int BLOCK = 1 << 20;

    private OgbFeatures() {
    }

    /**
     * The features, float32 [rows, f], f being the first row's width.
     *
     * @param numNodes the rows there must be, or -1 to take as many as the file has
     * @throws GraphFormatException for a row of another width, a value that is not a number, or
     *     another number of rows than {@code numNodes}, naming the file and line
     */
    static Tensor read(Path f, long numNodes) throws IOException {
        TensorSink sink = new TensorSink(numNodes);
        try {
            forEachBlock(f, numNodes, sink);
            return sink.result();
        } catch (IOException | RuntimeException e) {
            sink.close();
            throw e;
        }
    }

    /**
     * Parses the rows a block at a time into {@code sink}, checking them as {@link #read} does;
     * returns the width.
     */
    static int forEachBlock(Path f, long numNodes, OgbFolder.FeatureSink sink) throws IOException {
        try (NumericCsv csv = NumericCsv.open(f)) {
            if (!csv.nextLine()) {
                throw new GraphFormatException(f + ": empty, expected one row of features per node");
            }
            float[] first = firstRow(csv);
            int width = first.length;
            float[] block = Arrays.copyOf(first, Math.max(width, BLOCK / width * width));
            int filled = width;
            long rows = 1;
            while (csv.nextLine()) {
                if (numNodes >= 0 && rows == numNodes) {
                    throw new GraphFormatException(csv.at() + "more rows than the " + numNodes + " nodes (num-node-list)");
                }
                if (filled == block.length) {
                    sink.accept(block, filled, width);
                    filled = 0;
                }
                for (int j = 0; j < width; j++) {
                    block[filled++] = csv.readFloat("feature");
                }
                csv.endLine(width);
                rows++;
            }
            if (numNodes >= 0 && rows != numNodes) {
                throw new GraphFormatException(f + ": " + rows + " rows of features for " + numNodes + " nodes (num-node-list)");
            }
            sink.accept(block, filled, width);
            return width;
        }
    }

    /** The number of values on the first row (reads that row only). */
    static int width(Path f) throws IOException {
        try (NumericCsv csv = NumericCsv.open(f)) {
            if (!csv.nextLine()) {
                throw new GraphFormatException(f + ": empty, expected one row of features per node");
            }
            return firstRow(csv).length;
        }
    }

    private static float[] firstRow(NumericCsv csv) throws IOException {
        float[] row = new float[64];
        int n = 0;
        do {
            if (n == row.length) {
                row = Arrays.copyOf(row, 2 * n);
            }
            row[n] = csv.readFloat("feature");
            n++;
        } while (!csv.atEndOfLine());
        csv.endLine(n);
        return Arrays.copyOf(row, n);
    }

    /** Copies the blocks into a tensor, growing it (to twice its rows, at least enough) when the node count was not given. */
    private static final class TensorSink implements OgbFolder.FeatureSink {
        private final long numNodes;
        private Tensor x;
        private long written;
        private int width;

        TensorSink(long numNodes) {
            this.numNodes = numNodes;
        }

        @Override
        public void accept(float[] block, int count, int w) {
            if (x == null) {
                width = w;
                x = Tensors.empty(ScalarType.Float, numNodes >= 0 ? numNodes : 1024, width);
            }
            long need = (written + count) / width;
            if (need > x.size(0)) {
                Tensor bigger = Tensors.empty(ScalarType.Float, Math.max(need, 2 * x.size(0)), width);
                bigger.narrow(0, 0, written / width).copy_(x.narrow(0, 0, written / width));
                x.close();
                x = bigger;
            }
            if (count > 0) {
                new FloatPointer(x.data_ptr()).position(written).put(block, 0, count);
            }
            written += count;
        }

        /** The rows read, in a tensor of exactly their number. */
        Tensor result() {
            long rows = written / width;
            if (x.size(0) != rows) {
                Tensor exact = x.narrow(0, 0, rows).clone();
                x.close();
                x = exact;
            }
            return x;
        }

        void close() {
            if (x != null) {
                x.close();
            }
        }
    }
}
