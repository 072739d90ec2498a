package io.mn4j.iterators;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/** Copies between Java arrays and CPU tensors, through direct buffers over the tensor's memory. */
final class NativeArrays {
    private NativeArrays() {
    }

    /** A new tensor of the given shape and dtype whose bytes are {@code data} (native order). */
    static Tensor fromBytes(byte[] data, long[] shape, torch.ScalarType type) {
        Tensor t = torch.empty(shape, new TensorOptions(type), null);
        if (t.nbytes() != data.length) {
            throw new IllegalArgumentException("expected " + t.nbytes() + " bytes for " + type
                    + java.util.Arrays.toString(shape) + " but got " + data.length);
        }
        if (data.length > 0) {
            bytes(t).put(data);
        }
        return t;
    }

    /** A new int64 tensor holding {@code values}. */
    static Tensor fromLongs(long[] values) {
        Tensor t = torch.empty(new long[] {values.length}, new TensorOptions(torch.ScalarType.Long), null);
        if (values.length > 0) {
            bytes(t).asLongBuffer().put(values);
        }
        return t;
    }

    /** A new float64 tensor holding {@code values} with the given shape. */
    static Tensor fromDoubles(double[] values, long[] shape) {
        Tensor t = torch.empty(shape, new TensorOptions(torch.ScalarType.Double), null);
        if (values.length > 0) {
            bytes(t).asDoubleBuffer().put(values);
        }
        return t;
    }

    /** The elements of a 1-d integer tensor as longs. */
    static long[] toLongs(Tensor t) {
        if (t.dim() != 1) {
            throw new IllegalArgumentException("expected a 1-d index tensor, got " + t.dim() + "-d");
        }
        long[] out = new long[(int) t.numel()];
        if (out.length == 0) {
            return out;
        }
        Tensor c = t.to(torch.ScalarType.Long).contiguous();
        bytes(c).asLongBuffer().get(out);
        return out;
    }

    /** The elements of a tensor as doubles, in row-major order. */
    static double[] toDoubles(Tensor t) {
        double[] out = new double[(int) t.numel()];
        if (out.length == 0) {
            return out;
        }
        Tensor c = t.to(torch.ScalarType.Double).contiguous();
        bytes(c).asDoubleBuffer().get(out);
        return out;
    }

    private static ByteBuffer bytes(Tensor contiguousCpu) {
        return new BytePointer(contiguousCpu.data_ptr()).capacity(contiguousCpu.nbytes()).asByteBuffer()
                .order(ByteOrder.nativeOrder());
    }
}
