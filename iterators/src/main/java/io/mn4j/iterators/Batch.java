package io.mn4j.iterators;

import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * A mini-batch: {@link #size()} examples stored field by field, each field one tensor whose first
 * dimension is the batch size (for example images {@code [B, 784]} float32 and labels {@code [B]}
 * int64). A batch may have no field at all (the items of an empty data set, see
 * {@link Datasets#createEmptyDataset}); it still knows how many examples it stands for.
 *
 * <p>The tensors belong to the caller: batches made inside a {@code PointerScope} are released
 * with it.
 */
public final class Batch {
    private final long size;
    private final List<Tensor> fields;

    /**
     * A batch of {@code size} examples; every field must have at least one dimension, of length
     * {@code size}.
     */
    public Batch(long size, List<Tensor> fields) {
        if (size < 0) {
            throw new IllegalArgumentException("batch size must be >= 0, got " + size);
        }
        for (int f = 0; f < fields.size(); f++) {
            Tensor t = fields.get(f);
            if (t == null || t.dim() == 0 || t.size(0) != size) {
                throw new IllegalArgumentException("field " + f + " of a batch of " + size + " must have "
                        + size + " rows, got " + describe(t));
            }
        }
        this.size = size;
        this.fields = Collections.unmodifiableList(new ArrayList<>(fields));
    }

    /** A batch of the given fields; the size is their common first dimension. */
    public static Batch of(Tensor... fields) {
        if (fields.length == 0) {
            throw new IllegalArgumentException("Batch.of needs at least one field; use new Batch(size, List.of())");
        }
        if (fields[0].dim() == 0) {
            throw new IllegalArgumentException("batch fields need a first (batch) dimension, got a 0-d tensor");
        }
        return new Batch(fields[0].size(0), Arrays.asList(fields));
    }

    /** Number of examples. */
    public long size() {
        return size;
    }

    /** Number of fields (tensors) per example. */
    public int numFields() {
        return fields.size();
    }

    /** Field {@code index} of all examples, batch dimension first. */
    public Tensor field(int index) {
        if (index < 0 || index >= fields.size()) {
            throw new IndexOutOfBoundsException("field " + index + " of a batch with " + fields.size() + " fields");
        }
        return fields.get(index);
    }

    /** All fields, in order (unmodifiable). */
    public List<Tensor> fields() {
        return fields;
    }

    /**
     * Stacks items into a batch. An item is a {@link Tensor} (one field), a {@code Tensor[]} or a
     * {@code List<Tensor>} (one tensor per field; an empty one for empty items). All items must
     * have the same number of fields, and each field the same shape and dtype.
     */
    public static Batch collate(List<?> items) {
        int n = items.size();
        List<List<Tensor>> rows = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            rows.add(fieldsOf(items.get(i), i));
        }
        if (n == 0) {
            return new Batch(0, List.of());
        }
        int numFields = rows.get(0).size();
        List<Tensor> stacked = new ArrayList<>(numFields);
        for (int f = 0; f < numFields; f++) {
            Tensor first = rows.get(0).get(f);
            long[] shape = Tensors.shape(first);
            TensorVector column = new TensorVector();
            for (int i = 0; i < n; i++) {
                List<Tensor> row = rows.get(i);
                if (row.size() != numFields) {
                    throw new DatasetException("cannot batch items with different numbers of fields: item 0 has "
                            + numFields + ", item " + i + " has " + row.size());
                }
                Tensor t = row.get(f);
                if (t.scalar_type().value != first.scalar_type().value || !Tensors.hasShape(t, shape)) {
                    throw new DatasetException("cannot batch field " + f + ": item 0 is " + describe(first)
                            + " but item " + i + " is " + describe(t));
                }
                column.push_back(t);
            }
            stacked.add(torch.stack(column, 0));
        }
        return new Batch(n, stacked);
    }

    private static List<Tensor> fieldsOf(Object item, int index) {
        if (item instanceof Tensor t) {
            return List.of(t);
        }
        if (item instanceof Tensor[] ts) {
            return Arrays.asList(ts);
        }
        if (item instanceof List<?> list) {
            List<Tensor> out = new ArrayList<>(list.size());
            for (Object o : list) {
                if (!(o instanceof Tensor t)) {
                    throw new DatasetException("cannot batch item " + index + ": its list holds a "
                            + (o == null ? "null" : o.getClass().getName()) + ", not a Tensor");
                }
                out.add(t);
            }
            return out;
        }
        throw new DatasetException("cannot batch item " + index + " of type "
                + (item == null ? "null" : item.getClass().getName())
                + ": items must be a Tensor, a Tensor[] or a List<Tensor> (or override Dataset.batch)");
    }

    static String describe(Tensor t) {
        return t == null ? "null" : t.scalar_type() + Arrays.toString(Tensors.shape(t));
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("Batch(").append(size).append(" examples");
        for (Tensor t : fields) {
            sb.append(", ").append(describe(t));
        }
        return sb.append(')').toString();
    }
}
