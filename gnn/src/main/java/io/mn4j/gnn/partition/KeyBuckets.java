package io.mn4j.gnn.partition;

import io.mn4j.gnn.io.BufferedFileWriter;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;

/**
 * An external sort of {@code long} keys within a memory budget: keys are spread into temporary
 * files ("buckets") by ranges of their high 32 bits (a node id or position), then each bucket is
 * loaded, sorted and handed on, in ascending order. A bucket holds every key of its range, so a
 * consumer sees all keys of one high value in one chunk. A bucket that turns out larger than the
 * budget (the key count was underestimated, or the keys are skewed) is split again into narrower
 * ranges; only a single high value with more keys than the budget holds is an error.
 */
final class KeyBuckets implements AutoCloseable {
    /** Files open for writing at once, at most. */
    private static final int MAX_BUCKETS = 256;
    private static final int MIN_BUFFER = 1 << 13;
    private static final int MAX_BUFFER = 1 << 20;

    private final Path dir;
    private final String name;
    private final int capacity;
    private final long budgetBytes;
    private final List<Path> files = new ArrayList<>();
    private Spreader spreader;

    /** Receives the keys of one or more whole high values, sorted; the array is reused afterwards. */
    interface Chunk {
        void accept(long[] keys, int count) throws IOException;
    }

    /**
     * @param dir where the bucket files go (deleted by {@link #close()} or once drained)
     * @param name prefix of the bucket files
     * @param highLimit every key's high 32 bits lie in {@code [0, highLimit)}
     * @param expectedKeys about how many keys will be added (to choose the number of buckets)
     * @param budgetBytes memory for the keys sorted at once and the write buffers
     */
    KeyBuckets(Path dir, String name, long highLimit, long expectedKeys, long budgetBytes) throws IOException {
        this.dir = dir;
        this.name = name;
        this.budgetBytes = budgetBytes;
        this.capacity = (int) Math.min(Integer.MAX_VALUE - 8, Math.max(1024, budgetBytes * 3 / 4 / Long.BYTES));
        this.spreader = new Spreader(0, Math.max(1, highLimit), buckets(expectedKeys));
    }

    /** Memory for the keys sorted at once, in keys (three quarters of the budget). */
    int capacity() {
        return capacity;
    }

    /** Buckets for {@code keys} keys: enough that each, at the expected size plus a quarter, fits {@link #capacity()}. */
    private int buckets(long keys) {
        return (int) Math.max(1, Math.min(MAX_BUCKETS, (keys + keys / 4) / capacity + 1));
    }

    /** Adds a key (before {@link #drain}). */
    void add(long key) throws IOException {
        spreader.add(key);
    }

    /** Hands every key added to {@code consumer}, sorted, a bucket at a time in ascending order, and deletes the buckets. */
    void drain(Chunk consumer) throws IOException {
        Deque<Bucket> todo = new ArrayDeque<>();
        pushInOrder(todo, spreader.finish());
        spreader = null;
        long largest = 0;
        for (Bucket b : todo) largest = Math.max(largest, b.count);
        long[] keys = new long[(int) Math.min(capacity, largest)];
        ByteBuffer in = ByteBuffer.allocate(MAX_BUFFER).order(ByteOrder.nativeOrder());
        while (!todo.isEmpty()) {
            Bucket b = todo.pop();
            if (b.count <= capacity) {
                if (keys.length < b.count) keys = new long[capacity];
                read(b, in, keys);
                Arrays.sort(keys, 0, (int) b.count);
                consumer.accept(keys, (int) b.count);
            } else if (b.hi - b.lo == 1) {
                throw new IllegalArgumentException("the memory budget of " + (budgetBytes >> 20) + " MiB sorts " + capacity
                        + " entries at once, but node " + b.lo + " alone has " + b.count + ": raise the memory budget");
            } else {
                pushInOrder(todo, split(b, in));
            }
            Files.deleteIfExists(b.file);
        }
    }

    /** Spreads an oversized bucket over narrower ranges. */
    private List<Bucket> split(Bucket b, ByteBuffer in) throws IOException {
        Spreader s = new Spreader(b.lo, b.hi, (int) Math.min(MAX_BUCKETS, (b.count + b.count / 4) / capacity + 2));
        try {
            readKeys(b.file, in, lb -> {
                while (lb.hasRemaining()) s.add(lb.get());
            });
        } catch (IOException | RuntimeException e) {
            s.closeFiles();
            throw e;
        }
        return s.finish();
    }

    private static void read(Bucket b, ByteBuffer in, long[] keys) throws IOException {
        int[] got = {0};
        readKeys(b.file, in, lb -> {
            int n = lb.remaining();
            lb.get(keys, got[0], n);
            got[0] += n;
        });
        if (got[0] != b.count) throw new IOException(b.file + ": " + got[0] + " of " + b.count + " entries");
    }

    /** Receives a file's keys a buffer at a time. */
    private interface KeyBlock {
        void accept(LongBuffer keys) throws IOException;
    }

    /** Reads a bucket file from start to end through {@code in}. */
    private static void readKeys(Path file, ByteBuffer in, KeyBlock block) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            in.clear();
            int r;
            do {
                r = ch.read(in);
                in.flip();
                LongBuffer lb = in.asLongBuffer();
                block.accept(lb);
                in.position(lb.position() * Long.BYTES);
                in.compact();
            } while (r >= 0);
        }
    }

    private static void pushInOrder(Deque<Bucket> todo, List<Bucket> buckets) {
        for (int i = buckets.size() - 1; i >= 0; i--) todo.push(buckets.get(i));
    }

    /** Deletes the bucket files left. */
    @Override
    public void close() throws IOException {
        if (spreader != null) spreader.closeFiles();
        for (Path f : files) Files.deleteIfExists(f);
    }

    /** One bucket: the keys whose high 32 bits lie in {@code [lo, hi)}. */
    private record Bucket(long lo, long hi, Path file, long count) {
    }

    /** Buckets being written: {@code k} ranges of equal width over {@code [lo, hi)}. */
    private final class Spreader {
        private final long lo, hi;
        private final int k;
        private final BufferedFileWriter[] out;
        private final Path[] file;
        private final long[] count;

        Spreader(long lo, long hi, int buckets) throws IOException {
            this.lo = lo;
            this.hi = hi;
            this.k = (int) Math.min(buckets, hi - lo);
            out = new BufferedFileWriter[k];
            file = new Path[k];
            count = new long[k];
            int bytes = (int) Math.max(MIN_BUFFER, Math.min(MAX_BUFFER, budgetBytes / 4 / k)) & ~7;
            try {
                for (int i = 0; i < k; i++) {
                    file[i] = dir.resolve(name + "-" + files.size() + ".bin");
                    files.add(file[i]);
                    out[i] = new BufferedFileWriter(file[i], bytes, ByteOrder.nativeOrder(), StandardOpenOption.CREATE_NEW);
                }
            } catch (IOException | RuntimeException e) {
                closeFiles();
                throw e;
            }
        }

        void add(long key) throws IOException {
            long h = key >>> 32;
            if (h < lo || h >= hi) throw new IllegalArgumentException("key's high value " + h + " outside [" + lo + ", " + hi + ")");
            int i = (int) ((h - lo) * k / (hi - lo));
            out[i].room(Long.BYTES).putLong(key);
            count[i]++;
        }

        /** Closes the files (writing out their buffers); the buckets in ascending order of range. */
        List<Bucket> finish() throws IOException {
            List<Bucket> done = new ArrayList<>(k);
            try {
                for (int i = 0; i < k; i++) {
                    long from = lo + ((long) i * (hi - lo) + k - 1) / k;
                    long to = lo + ((long) (i + 1) * (hi - lo) + k - 1) / k;
                    done.add(new Bucket(from, to, file[i], count[i]));
                }
            } finally {
                closeFiles();
            }
            return done;
        }

        void closeFiles() throws IOException {
            IOException first = null;
            for (BufferedFileWriter c : out) {
                if (c == null) continue;
                try {
                    c.close();
                } catch (IOException e) {
                    if (first == null) first = e;
                }
            }
            if (first != null) throw first;
        }
    }
}
