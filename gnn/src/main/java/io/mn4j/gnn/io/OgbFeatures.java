package io.mn4j.gnn.io;

import io.mn4j.tensor.Tensors;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * Reads a node-feature CSV (OGB's {@code node-feat.csv.gz}: one row of f numbers per node) straight
 * into a float32 tensor, a block of rows at a time: the rows never exist as Java strings or as one
 * Java array (papers100M's would not fit one).
 */
final class OgbFeatures {
    /** Floats parsed before they are copied into the tensor. */
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
        try (NumericCsv csv = NumericCsv.open(f)) {
            if (!csv.nextLine()) {
                throw new GraphFormatException(f + ": empty, expected one row of features per node");
            }
            float[] first = firstRow(csv);
            int width = first.length;
            float[] block = Arrays.copyOf(first, Math.max(width, BLOCK / width * width));
            int filled = width;
            long rows = 1;
            Tensor x = Tensors.empty(ScalarType.Float, numNodes >= 0 ? numNodes : 1024, width);
            long written = 0;
            try {
                while (csv.nextLine()) {
                    if (numNodes >= 0 && rows == numNodes) {
                        throw new GraphFormatException(csv.at() + "more rows than the " + numNodes + " nodes (num-node-list)");
                    }
                    if (filled == block.length) {
                        x = store(x, written, block, filled, width);
                        written += filled;
                        filled = 0;
                    }
                    for (int j = 0; j < width; j++) {
                        block[filled++] = csv.readFloat("feature");
                    }
                    csv.endLine(width);
                    rows++;
                }
                x = store(x, written, block, filled, width);
                if (numNodes >= 0 && rows != numNodes) {
                    throw new GraphFormatException(f + ": " + rows + " rows of features for " + numNodes + " nodes (num-node-list)");
                }
                if (x.size(0) != rows) {
                    Tensor exact = x.narrow(0, 0, rows).clone();
                    x.close();
                    x = exact;
                }
                return x;
            } catch (IOException | RuntimeException e) {
                x.close();
                throw e;
            }
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

    /**
     * Copies {@code count} floats of {@code block} into {@code x} after its first {@code written}
     * floats, first growing {@code x} (to twice its rows, at least enough) when the node count was not
     * given; returns the tensor now holding the rows.
     */
    private static Tensor store(Tensor x, long written, float[] block, int count, int width) {
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
        return x;
    }
}
