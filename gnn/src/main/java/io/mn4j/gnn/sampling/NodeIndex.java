package io.mn4j.gnn.sampling;

import java.util.Arrays;

/**
 * Positions of distinct node ids (non-negative longs) in the order they were added: an
 * open-addressing hash map from id to position without boxing, for building a block's source list
 * (a batch's neighbourhood holds up to hundreds of thousands of nodes).
 */
final class NodeIndex {
    private long[] keys;
    private int[] values;
    private int size;

    NodeIndex(int expected) {
        int capacity = Integer.highestOneBit(Math.max(16, expected * 2 - 1)) << 1;
        keys = new long[capacity];
        values = new int[capacity];
        Arrays.fill(keys, -1);
    }

    /** The position of {@code id}, adding it at the next position if it is new. */
    int indexOf(long id) {
        int mask = keys.length - 1;
        int slot = hash(id) & mask;
        while (keys[slot] != -1) {
            if (keys[slot] == id) {
                return values[slot];
            }
            slot = (slot + 1) & mask;
        }
        keys[slot] = id;
        values[slot] = size;
        if (++size * 2 > keys.length) {
            grow();
        }
        return size - 1;
    }

    /** Ids added so far. */
    int size() {
        return size;
    }

    private void grow() {
        long[] oldKeys = keys;
        int[] oldValues = values;
        keys = new long[oldKeys.length * 2];
        values = new int[oldValues.length * 2];
        Arrays.fill(keys, -1);
        int mask = keys.length - 1;
        for (int i = 0; i < oldKeys.length; i++) {
            if (oldKeys[i] != -1) {
                int slot = hash(oldKeys[i]) & mask;
                while (keys[slot] != -1) {
                    slot = (slot + 1) & mask;
                }
                keys[slot] = oldKeys[i];
                values[slot] = oldValues[i];
            }
        }
    }

    private static int hash(long id) {
        long z = id * 0x9E3779B97F4A7C15L;
        return (int) (z ^ (z >>> 32));
    }
}
