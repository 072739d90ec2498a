package io.mn4j.gnn.io;

import java.util.Arrays;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * The parsed header of a {@code .npy} array: numpy's type string ({@code descr}), the LibTorch type
 * it maps to, and the shape. Only C-order, little-endian arrays are represented.
 *
 * @param descr numpy type string, e.g. {@code <f4}
 * @param type the LibTorch scalar type of the data
 * @param shape the array's shape (empty for a scalar)
 * @param headerBytes total header length in bytes (magic, version, length field and dictionary)
 */
public record NpyHeader(String descr, ScalarType type, long[] shape, long headerBytes) {

    /** Number of elements (1 for a scalar). */
    public long numel() {
        long n = 1;
        for (long d : shape) n = Math.multiplyExact(n, d);
        return n;
    }

    /** Bytes per element. */
    public int itemSize() {
        return Npy.itemSize(type);
    }

    /** Number of data bytes that follow the header. */
    public long dataBytes() {
        return Math.multiplyExact(numel(), (long) itemSize());
    }

    @Override
    public String toString() {
        return descr + " " + Arrays.toString(shape);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof NpyHeader h && h.descr.equals(descr) && h.type == type && Arrays.equals(h.shape, shape)
                && h.headerBytes == headerBytes;
    }

    @Override
    public int hashCode() {
        return descr.hashCode() * 31 + Arrays.hashCode(shape);
    }
}
