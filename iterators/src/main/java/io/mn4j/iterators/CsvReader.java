package io.mn4j.iterators;

import io.mn4j.tensor.Tensors;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * Reads a numeric CSV file into a {@link TensorDataset}: one example per line, the feature columns
 * as one field {@code [N, F]} and, optionally, one label column as a second field {@code [N]}.
 * Blank lines and lines starting with {@code #} are skipped; values may be quoted. A header line
 * is skipped when asked to, or (by default) when its first line is not all numbers.
 *
 * <pre>{@code
 * TensorDataset iris = CsvReader.builder().labelColumn(4).read(Path.of("iris.csv"));
 * }</pre>
 *
 * Errors name the file, the line and the column.
 */
public final class CsvReader {
    /** Whether the first line is a header. */
    public enum Header { AUTO, YES, NO }

    private char delimiter = ',';
    private Header header = Header.AUTO;
    private int labelColumn = Integer.MIN_VALUE;
    private torch.ScalarType featureType = torch.ScalarType.Float;
    private torch.ScalarType labelType = torch.ScalarType.Long;

    private CsvReader() {
    }

    /** A reader with defaults: comma, header detected, no label column, float32 features, int64 labels. */
    public static CsvReader builder() {
        return new CsvReader();
    }

    /** The column separator. */
    public CsvReader delimiter(char c) {
        this.delimiter = c;
        return this;
    }

    /** Header handling (default {@link Header#AUTO}). */
    public CsvReader header(Header h) {
        this.header = h;
        return this;
    }

    /** The label column, 0-based; negative counts from the end (-1 is the last column). */
    public CsvReader labelColumn(int column) {
        this.labelColumn = column;
        return this;
    }

    /** No label column: every column is a feature (the default). */
    public CsvReader noLabel() {
        this.labelColumn = Integer.MIN_VALUE;
        return this;
    }

    /** The dtype of the features (default float32). */
    public CsvReader featureType(torch.ScalarType type) {
        this.featureType = type;
        return this;
    }

    /** The dtype of the labels (default int64; an integer type requires integral labels). */
    public CsvReader labelType(torch.ScalarType type) {
        this.labelType = type;
        return this;
    }

    /**
     * Reads the file.
     *
     * @throws DatasetException on a missing file, a non-number, a ragged line or an empty file
     */
    public TensorDataset read(Path file) {
        List<double[]> rows = new ArrayList<>();
        int columns = -1;
        try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            String line;
            int lineNo = 0;
            boolean first = true;
            while ((line = in.readLine()) != null) {
                lineNo++;
                String trimmed = line.strip();
                if (trimmed.isEmpty() || trimmed.startsWith("#")) {
                    continue;
                }
                String[] cells = split(trimmed);
                if (first) {
                    first = false;
                    boolean skip = header == Header.YES || (header == Header.AUTO && !allNumbers(cells));
                    if (skip) {
                        columns = cells.length;
                        continue;
                    }
                }
                if (columns < 0) {
                    columns = cells.length;
                }
                if (cells.length != columns) {
                    throw new DatasetException(file + " line " + lineNo + ": expected " + columns
                            + " columns, found " + cells.length);
                }
                double[] row = new double[columns];
                for (int c = 0; c < columns; c++) {
                    row[c] = parse(cells[c], file, lineNo, c);
                }
                rows.add(row);
            }
        } catch (NoSuchFileException e) {
            throw new DatasetException("CSV file not found: " + file, e);
        } catch (IOException e) {
            throw new DatasetException("cannot read CSV file " + file + ": " + e, e);
        }
        if (rows.isEmpty()) {
            throw new DatasetException("CSV file " + file + " has no data lines");
        }
        return toDataset(rows, columns, file);
    }

    private TensorDataset toDataset(List<double[]> rows, int columns, Path file) {
        int label = labelColumn == Integer.MIN_VALUE ? -1 : labelColumn < 0 ? columns + labelColumn : labelColumn;
        if (labelColumn != Integer.MIN_VALUE && (label < 0 || label >= columns)) {
            throw new DatasetException("label column " + labelColumn + " does not exist in " + file + " ("
                    + columns + " columns)");
        }
        int features = label >= 0 ? columns - 1 : columns;
        if (features == 0) {
            throw new DatasetException(file + " has no feature column besides the label");
        }
        int n = rows.size();
        double[] x = new double[Math.multiplyExact(n, features)];
        double[] y = new double[label >= 0 ? n : 0];
        boolean integralLabels = !torch.isFloatingType(labelType);
        for (int i = 0; i < n; i++) {
            double[] row = rows.get(i);
            int k = 0;
            for (int c = 0; c < columns; c++) {
                if (c == label) {
                    if (integralLabels && row[c] != Math.rint(row[c])) {
                        throw new DatasetException(file + " data row " + (i + 1) + ": label " + row[c]
                                + " is not an integer (use labelType(Float) for regression targets)");
                    }
                    y[i] = row[c];
                } else {
                    x[i * features + k++] = row[c];
                }
            }
        }
        Tensor xs = Tensors.doubles(x, new long[] {n, features}).to(featureType);
        if (label < 0) {
            return new TensorDataset(xs);
        }
        Tensor ys = Tensors.doubles(y, new long[] {n}).to(labelType);
        return new TensorDataset(xs, ys);
    }

    private String[] split(String line) {
        List<String> out = new ArrayList<>();
        int start = 0;
        for (int i = 0; i <= line.length(); i++) {
            if (i == line.length() || line.charAt(i) == delimiter) {
                out.add(unquote(line.substring(start, i).strip()));
                start = i + 1;
            }
        }
        return out.toArray(new String[0]);
    }

    private static String unquote(String s) {
        if (s.length() >= 2 && (s.charAt(0) == '"' || s.charAt(0) == '\'') && s.charAt(s.length() - 1) == s.charAt(0)) {
            return s.substring(1, s.length() - 1).strip();
        }
        return s;
    }

    private static boolean allNumbers(String[] cells) {
        return Arrays.stream(cells).allMatch(CsvReader::isNumber);
    }

    private static boolean isNumber(String s) {
        try {
            Double.parseDouble(s);
            return true;
        } catch (NumberFormatException e) {
            return false;
        }
    }

    private static double parse(String s, Path file, int line, int column) {
        try {
            return Double.parseDouble(s);
        } catch (NumberFormatException e) {
            throw new DatasetException(file + " line " + line + ", column " + (column + 1) + ": '" + s
                    + "' is not a number");
        }
    }
}
