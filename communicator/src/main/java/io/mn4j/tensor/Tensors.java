package io.mn4j.tensor;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.DoublePointer;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * Conversions between Java primitive arrays and contiguous CPU LibTorch tensors, and tensors'
 * shapes and dtypes read cheaply: the one home of these helpers for every mn4j module.
 *
 * <p>All copies go through JavaCPP's bulk {@code put/get} on the tensor's own memory, so they cost
 * one memcpy. Tensors with no elements never touch {@code data_ptr()} (it is null for them).
 */
public final class Tensors {
    private Tensors() {}

    /** An uninitialised contiguous CPU tensor of the given type and shape. */
    public static Tensor empty(ScalarType type, long... shape) {
        return torch.empty(shape, new TensorOptions(type), null);
    }

    /** A zero-filled contiguous CPU tensor of the given type and shape. */
    public static Tensor zeros(ScalarType type, long... shape) {
        return torch.zeros(shape, new TensorOptions(type));
    }

    /** A tensor of the given shape and dtype whose bytes are a copy of {@code data} (native order). */
    public static Tensor fromBytes(byte[] data, ScalarType type, long... shape) {
        Tensor t = empty(type, shape);
        if (t.nbytes() != data.length) {
            long nbytes = t.nbytes();
            t.close();
            throw new IllegalArgumentException("expected " + nbytes + " bytes for " + type + Arrays.toString(shape)
                    + " but got " + data.length);
        }
        if (data.length > 0) new BytePointer(t.data_ptr()).put(data, 0, data.length);
        return t;
    }

    /** An int64 tensor of shape [a.length] holding a copy of {@code a}. */
    public static Tensor longs(long... a) {
        Tensor t = empty(ScalarType.Long, a.length);
        if (a.length > 0) new LongPointer(t.data_ptr()).put(a, 0, a.length);
        return t;
    }

    /** An int64 tensor of shape [a.length] holding {@code a} widened to 64 bits. */
    public static Tensor longs(int[] a) {
        Tensor t = empty(ScalarType.Int, a.length);
        if (a.length > 0) new IntPointer(t.data_ptr()).put(a, 0, a.length);
        Tensor l = t.to(ScalarType.Long);
        t.close();
        return l;
    }

    /** An int32 tensor of shape [a.length] holding a copy of {@code a}. */
    public static Tensor ints(int[] a) {
        Tensor t = empty(ScalarType.Int, a.length);
        if (a.length > 0) new IntPointer(t.data_ptr()).put(a, 0, a.length);
        return t;
    }

    /** A float32 tensor of the given shape holding a copy of {@code a} (C order). */
    public static Tensor floats(float[] a, long... shape) {
        long[] s = shape.length == 0 ? new long[] {a.length} : shape;
        checkCount(a.length, s);
        Tensor t = empty(ScalarType.Float, s);
        if (a.length > 0) new FloatPointer(t.data_ptr()).put(a, 0, a.length);
        return t;
    }

    /** A float64 tensor of the given shape holding a copy of {@code a} (C order). */
    public static Tensor doubles(double[] a, long... shape) {
        long[] s = shape.length == 0 ? new long[] {a.length} : shape;
        checkCount(a.length, s);
        Tensor t = empty(ScalarType.Double, s);
        if (a.length > 0) new DoublePointer(t.data_ptr()).put(a, 0, a.length);
        return t;
    }

    /** A bool tensor of shape [a.length] holding a copy of {@code a}. */
    public static Tensor bools(boolean[] a) {
        byte[] b = new byte[a.length];
        for (int i = 0; i < a.length; i++) b[i] = a[i] ? (byte) 1 : 0;
        Tensor t = empty(ScalarType.Bool, a.length);
        if (a.length > 0) new BytePointer(t.data_ptr()).put(b, 0, b.length);
        return t;
    }

    /** The elements of an integer tensor (any integer dtype, any layout) as int64 values, C order. */
    public static long[] toLongArray(Tensor t) {
        int n = checkedLength(t);
        long[] out = new long[n];
        if (n == 0) return out;
        try (PointerScope s = new PointerScope()) {
            Tensor c = t.to(ScalarType.Long).contiguous();
            new LongPointer(c.data_ptr()).get(out, 0, n);
        }
        return out;
    }

    /**
     * The elements of an integer tensor as int32 values, C order.
     *
     * @throws ArithmeticException if a value does not fit in an int
     */
    public static int[] toIntArray(Tensor t) {
        int n = checkedLength(t);
        int[] out = new int[n];
        if (n == 0) return out;
        try (PointerScope s = new PointerScope()) {
            if (type(t) == ScalarType.Long) {
                Tensor c = t.contiguous();
                long[] l = new long[n];
                new LongPointer(c.data_ptr()).get(l, 0, n);
                for (int i = 0; i < n; i++) out[i] = Math.toIntExact(l[i]);
            } else {
                Tensor c = t.to(ScalarType.Int).contiguous();
                new IntPointer(c.data_ptr()).get(out, 0, n);
            }
        }
        return out;
    }

    /** The elements of a tensor converted to float32, C order. */
    public static float[] toFloatArray(Tensor t) {
        int n = checkedLength(t);
        float[] out = new float[n];
        if (n == 0) return out;
        try (PointerScope s = new PointerScope()) {
            Tensor c = t.to(ScalarType.Float).contiguous();
            new FloatPointer(c.data_ptr()).get(out, 0, n);
        }
        return out;
    }

    /** The elements of a tensor converted to float64, C order. */
    public static double[] toDoubleArray(Tensor t) {
        int n = checkedLength(t);
        double[] out = new double[n];
        if (n == 0) return out;
        try (PointerScope s = new PointerScope()) {
            Tensor c = t.to(ScalarType.Double).contiguous();
            new DoublePointer(c.data_ptr()).get(out, 0, n);
        }
        return out;
    }

    /** The elements of a tensor as booleans (non-zero is true), C order. */
    public static boolean[] toBooleanArray(Tensor t) {
        int n = checkedLength(t);
        boolean[] out = new boolean[n];
        if (n == 0) return out;
        byte[] b = new byte[n];
        try (PointerScope s = new PointerScope()) {
            Tensor c = t.to(ScalarType.Bool).contiguous();
            new BytePointer(c.data_ptr()).get(b, 0, n);
        }
        for (int i = 0; i < n; i++) out[i] = b[i] != 0;
        return out;
    }

    /**
     * The scalar type of {@code t} as a canonical enum constant.
     *
     * <p>Use this instead of {@code t.scalar_type()}: in this Bytedeco version the enum returned by
     * native code is a fresh instance (right {@code value}, wrong ordinal), so {@code ==},
     * {@code equals} and {@code switch} on it silently fail.
     */
    public static ScalarType type(Tensor t) {
        return canonical(t.scalar_type());
    }

    /** The canonical constant with the same native value as {@code st}. */
    public static ScalarType canonical(ScalarType st) {
        int v = st.value;
        ScalarType[] all = ScalarType.values();
        if (v >= 0 && v < all.length && all[v].value == v) return all[v];
        for (ScalarType c : all) if (c.value == v) return c;
        throw new IllegalArgumentException("unknown scalar type value " + v);
    }

    /**
     * The sizes of {@code t}, one per dimension (empty for a 0-d tensor). Read with {@code dim()}
     * and {@code size(i)}: {@code sizes().vec()} makes two native objects per call, which costs
     * on paths that run once per message.
     */
    public static long[] shape(Tensor t) {
        int ndim = (int) t.dim();
        long[] shape = new long[ndim];
        for (int i = 0; i < ndim; i++) {
            shape[i] = t.size(i);
        }
        return shape;
    }

    /** True if {@code t} has exactly the sizes {@code shape}. */
    public static boolean hasShape(Tensor t, long[] shape) {
        if (t.dim() != shape.length) {
            return false;
        }
        for (int i = 0; i < shape.length; i++) {
            if (t.size(i) != shape[i]) {
                return false;
            }
        }
        return true;
    }

    /** dtype and shape as text, for error messages, e.g. {@code Float[2708, 1433]}; "null" for null. */
    public static String describe(Tensor t) {
        return t == null ? "null" : t.scalar_type() + Arrays.toString(shape(t));
    }

    /** The shape of {@code t} as text, for error messages, e.g. {@code [2708, 1433]}. */
    public static String shapeString(Tensor t) {
        return Arrays.toString(shape(t));
    }

    /**
     * A direct, native-order byte buffer over the memory of a contiguous CPU tensor (no copy).
     * Returns an empty buffer for a tensor without elements.
     */
    public static ByteBuffer bytes(Tensor t) {
        if (!t.is_contiguous()) throw new IllegalArgumentException("tensor is not contiguous");
        if (t.numel() == 0) return ByteBuffer.allocateDirect(0).order(ByteOrder.nativeOrder());
        long nb = t.nbytes();
        if (nb > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("tensor of " + nb + " bytes is larger than one ByteBuffer; use slices");
        }
        return new BytePointer(t.data_ptr()).capacity(nb).asByteBuffer().order(ByteOrder.nativeOrder());
    }

    private static int checkedLength(Tensor t) {
        long n = t.numel();
        if (n > Integer.MAX_VALUE - 8) throw new IllegalArgumentException("tensor of " + n + " elements does not fit a Java array");
        return (int) n;
    }

    private static void checkCount(long n, long[] shape) {
        long p = 1;
        for (long d : shape) p *= d;
        if (p != n) throw new IllegalArgumentException("array of " + n + " elements does not match shape " + Arrays.toString(shape));
    }
}
