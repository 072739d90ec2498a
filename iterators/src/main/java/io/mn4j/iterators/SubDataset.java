package io.mn4j.iterators;

/**
 * The examples of another data set at given indices, in that order (Chainer's
 * {@code SubDataset} with an order): what {@link Datasets#scatterIndices} gives each rank. Batches
 * are gathered from the base data set directly.
 *
 * @param <T> the type of one example
 */
public final class SubDataset<T> implements Dataset<T> {
    private final Dataset<T> base;
    private final long[] indices;

    /** Example {@code i} of the result is example {@code indices[i]} of {@code base}. */
    public SubDataset(Dataset<T> base, long[] indices) {
        long n = base.size();
        for (long i : indices) {
            if (i < 0 || i >= n) {
                throw new IndexOutOfBoundsException("index " + i + " outside a data set of " + n + " examples");
            }
        }
        this.base = base;
        this.indices = indices.clone();
    }

    /**
     * Examples [begin, end) of {@code base} as seen through {@code order} (a permutation of the
     * base's indices), or of the base itself when {@code order} is null.
     */
    public static <T> SubDataset<T> range(Dataset<T> base, long begin, long end, long[] order) {
        if (begin < 0 || end < begin || end > base.size()) {
            throw new IndexOutOfBoundsException("range [" + begin + ", " + end + ") of a data set of " + base.size());
        }
        long[] idx = new long[Math.toIntExact(end - begin)];
        for (int i = 0; i < idx.length; i++) {
            idx[i] = order == null ? begin + i : order[(int) (begin + i)];
        }
        return new SubDataset<>(base, idx);
    }

    @Override
    public long size() {
        return indices.length;
    }

    @Override
    public T get(long index) {
        Dataset.checkIndex(index, indices.length);
        return base.get(indices[(int) index]);
    }

    @Override
    public Batch batch(long[] idx) {
        long[] mapped = new long[idx.length];
        for (int i = 0; i < idx.length; i++) {
            Dataset.checkIndex(idx[i], indices.length);
            mapped[i] = indices[(int) idx[i]];
        }
        return base.batch(mapped);
    }

    /** The base data set's index of each example (a copy). */
    public long[] indices() {
        return indices.clone();
    }

    /** The data set this is a view of. */
    public Dataset<T> base() {
        return base;
    }
}
