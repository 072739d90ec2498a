package io.mn4j.iterators;

import java.util.ArrayList;
import java.util.List;

/**
 * A finite, indexable collection of examples, like Chainer's dataset protocol ({@code len} and
 * {@code __getitem__}) plus a batch view that iterators use.
 *
 * @param <T> the type of one example
 */
public interface Dataset<T> {
    /** Number of examples. */
    long size();

    /**
     * Example {@code index}, in [0, {@link #size()}).
     *
     * @throws IndexOutOfBoundsException outside that range
     */
    T get(long index);

    /**
     * The examples at {@code indices} (repeats allowed), stacked into a {@link Batch}. The default
     * stacks {@link #get} results with {@link Batch#collate}; data sets backed by tensors override
     * it with one gather per field.
     */
    default Batch batch(long[] indices) {
        List<T> items = new ArrayList<>(indices.length);
        for (long i : indices) {
            items.add(get(i));
        }
        return Batch.collate(items);
    }

    /** Throws unless {@code index} is in [0, size). */
    static void checkIndex(long index, long size) {
        if (index < 0 || index >= size) {
            throw new IndexOutOfBoundsException("index " + index + " outside a data set of " + size + " examples");
        }
    }
}
