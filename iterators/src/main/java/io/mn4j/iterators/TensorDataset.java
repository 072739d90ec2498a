package io.mn4j.iterators;

import io.mn4j.tensor.Tensors;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.bytedeco.pytorch.Tensor;

/**
 * A data set held as tensors, one per field, sharing their first dimension (Chainer's
 * {@code TupleDataset} of arrays): example {@code i} is row {@code i} of every field. Batches are
 * gathered with one {@code index_select} per field, keeping each field's dtype and trailing shape.
 *
 * <p>A data set with no field stands for {@link #size()} empty examples; this is what
 * {@link Datasets#createEmptyDataset} returns for ranks whose inputs come from other ranks.
 *
 * <p>The tensors are not copied: they must outlive the data set (do not create them inside a
 * {@code PointerScope} that closes before the data set is used).
 */
public final class TensorDataset implements Dataset<List<Tensor>> {
    private final long size;
    private final List<Tensor> fields;

    /** A data set of the given fields (at least one), which must agree on their first dimension. */
    public TensorDataset(Tensor... fields) {
        this(Arrays.asList(fields));
    }

    /** A data set of the given fields (at least one), which must agree on their first dimension. */
    public TensorDataset(List<Tensor> fields) {
        this(sizeOf(fields), fields);
    }

    /**
     * A data set of {@code size} examples made of the given fields, each of which must have
     * {@code size} rows; with no field, {@code size} empty examples.
     */
    public TensorDataset(long size, List<Tensor> fields) {
        if (size < 0) {
            throw new IllegalArgumentException("data set size must be >= 0, got " + size);
        }
        for (int f = 0; f < fields.size(); f++) {
            Tensor t = fields.get(f);
            if (t == null || t.dim() == 0 || t.size(0) != size) {
                throw new IllegalArgumentException("field " + f + " must have " + size + " rows (the first field's), got "
                        + Batch.describe(t));
            }
        }
        this.size = size;
        this.fields = Collections.unmodifiableList(new ArrayList<>(fields));
    }

    /** {@code size} examples with no field. */
    public static TensorDataset empty(long size) {
        return new TensorDataset(size, List.of());
    }

    private static long sizeOf(List<Tensor> fields) {
        if (fields.isEmpty()) {
            throw new IllegalArgumentException("a TensorDataset needs at least one field; use TensorDataset.empty(n)");
        }
        Tensor first = fields.get(0);
        if (first == null || first.dim() == 0) {
            throw new IllegalArgumentException("field 0 needs a first (example) dimension, got " + Batch.describe(first));
        }
        return first.size(0);
    }

    @Override
    public long size() {
        return size;
    }

    /** Row {@code index} of every field (views, not copies). */
    @Override
    public List<Tensor> get(long index) {
        Dataset.checkIndex(index, size);
        List<Tensor> out = new ArrayList<>(fields.size());
        for (Tensor t : fields) {
            out.add(t.select(0, index));
        }
        return out;
    }

    @Override
    public Batch batch(long[] indices) {
        for (long i : indices) {
            Dataset.checkIndex(i, size);
        }
        if (fields.isEmpty()) {
            return new Batch(indices.length, List.of());
        }
        Tensor idx = Tensors.longs(indices);
        List<Tensor> out = new ArrayList<>(fields.size());
        for (Tensor t : fields) {
            out.add(t.index_select(0, idx));
        }
        return new Batch(indices.length, out);
    }

    /** Number of fields per example. */
    public int numFields() {
        return fields.size();
    }

    /** Field {@code index}: all examples, example dimension first. */
    public Tensor field(int index) {
        if (index < 0 || index >= fields.size()) {
            throw new IndexOutOfBoundsException("field " + index + " of a data set with " + fields.size() + " fields");
        }
        return fields.get(index);
    }

    /** All fields (unmodifiable). */
    public List<Tensor> fields() {
        return fields;
    }

    /** Examples [begin, end) as a data set of views. */
    public TensorDataset slice(long begin, long end) {
        if (begin < 0 || end < begin || end > size) {
            throw new IndexOutOfBoundsException("slice [" + begin + ", " + end + ") of a data set of " + size);
        }
        List<Tensor> out = new ArrayList<>(fields.size());
        for (Tensor t : fields) {
            out.add(t.narrow(0, begin, end - begin));
        }
        return new TensorDataset(end - begin, out);
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("TensorDataset(").append(size).append(" examples");
        for (Tensor t : fields) {
            sb.append(", ").append(Batch.describe(t));
        }
        return sb.append(')').toString();
    }
}
