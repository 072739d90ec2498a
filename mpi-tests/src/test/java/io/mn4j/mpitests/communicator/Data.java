package io.mn4j.mpitests.communicator;

import io.mn4j.communicator.ReduceOp;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.IntFunction;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * Deterministic test tensors: every rank can build any other rank's tensor from (dtype, shape,
 * seed), so expected results of a communication are computed locally, without communicating.
 */
final class Data {
    /** Every dtype the Communicator supports. */
    static final ScalarType[] DTYPES = {ScalarType.Float, ScalarType.Double, ScalarType.Int,
        ScalarType.Long, ScalarType.Char, ScalarType.Byte, ScalarType.Bool, ScalarType.Half,
        ScalarType.BFloat16};

    private Data() {
    }

    static String label(ScalarType t) {
        return switch (t) {
            case Float -> "float32";
            case Double -> "float64";
            case Int -> "int32";
            case Long -> "int64";
            case Char -> "int8";
            case Byte -> "uint8";
            case Bool -> "bool";
            case Half -> "float16";
            case BFloat16 -> "bfloat16";
            default -> t.toString();
        };
    }

    static boolean isFloat(ScalarType t) {
        return t == ScalarType.Float || t == ScalarType.Double || t == ScalarType.Half
                || t == ScalarType.BFloat16;
    }

    static long numel(long[] shape) {
        long n = 1;
        for (long d : shape) {
            n *= d;
        }
        return n;
    }

    static Tensor empty(ScalarType t, long... shape) {
        return torch.empty(shape, new TensorOptions(t), null);
    }

    /** A tensor whose memory is all ones-bits-ish garbage, to prove a receive overwrote it. */
    static Tensor filled(ScalarType t, long... shape) {
        Tensor x = empty(t, shape);
        return x.fill_(new Scalar(t == ScalarType.Bool ? 1L : 3L));
    }

    /**
     * Values spread over the dtype's range (large int64s, negative int8s, fractions), so a
     * byte-order or width mistake on the wire shows. Seeds give different values per sender.
     */
    static Tensor wide(ScalarType t, long[] shape, long seed) {
        long n = numel(shape);
        Tensor i = torch.arange(new Scalar(n)); // int64
        Tensor v = switch (t) {
            case Long -> i.mul(new Scalar(1_000_003L)).add(new Scalar(seed * (1L << 33) - (1L << 40)));
            case Int -> i.mul(new Scalar(10_007L)).add(new Scalar(seed * 1000 - 50_000));
            case Char -> i.mul(new Scalar(7L)).add(new Scalar(seed * 13)).remainder(new Scalar(256L))
                    .sub(new Scalar(128L));
            case Byte -> i.mul(new Scalar(7L)).add(new Scalar(seed * 13)).remainder(new Scalar(256L));
            case Bool -> i.add(new Scalar(seed)).remainder(new Scalar(3L)).eq(new Scalar(0L));
            default -> i.to(ScalarType.Double).mul(new Scalar(0.37)).add(new Scalar(seed - 5.5));
        };
        return v.to(t).reshape(shape);
    }

    /**
     * Small values (|x| at most 2.5) for reductions: sums and products over four ranks stay
     * exact in every dtype, so expected results are exact too.
     */
    static Tensor small(ScalarType t, long[] shape, long seed) {
        long n = numel(shape);
        Tensor v = torch.arange(new Scalar(n)).mul(new Scalar(7L)).add(new Scalar(seed * 13 + 3));
        Tensor out = switch (t) {
            case Byte -> v.remainder(new Scalar(4L));
            case Bool -> v.remainder(new Scalar(3L)).ne(new Scalar(0L));
            case Int, Long, Char -> v.remainder(new Scalar(5L)).sub(new Scalar(2L));
            default -> v.remainder(new Scalar(11L)).sub(new Scalar(5L)).to(ScalarType.Double)
                    .mul(new Scalar(0.5));
        };
        return out.to(t).reshape(shape);
    }

    /** Same values as {@code wide(t, {cols, rows}, seed).t()}: a non-contiguous [rows, cols]. */
    static Tensor wideTransposed(ScalarType t, long rows, long cols, long seed) {
        return wide(t, new long[] {cols, rows}, seed).t();
    }

    /** The element-wise reduction of {@code inputs} as computed in one process. */
    static Tensor reduce(List<Tensor> inputs, ReduceOp op) {
        ScalarType t = inputs.get(0).scalar_type();
        Tensor acc = inputs.get(0).to(ScalarType.Double);
        for (int r = 1; r < inputs.size(); r++) {
            Tensor x = inputs.get(r).to(ScalarType.Double);
            acc = switch (op) {
                case SUM, MEAN -> acc.add(x);
                case MAX -> acc.maximum(x);
                case MIN -> acc.minimum(x);
                case PROD -> acc.mul(x);
            };
        }
        if (op == ReduceOp.MEAN) {
            acc = acc.div(new Scalar((double) inputs.size()));
        }
        return t == ScalarType.Bool ? acc.ne(new Scalar(0L)) : acc.to(t);
    }

    static List<Tensor> perRank(int size, IntFunction<Tensor> f) {
        return perRankList(size, f);
    }

    static <T> List<T> perRankList(int size, IntFunction<T> f) {
        List<T> out = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            out.add(f.apply(r));
        }
        return out;
    }

    /** "float32[2, 3]", as the Communicator writes dtype and shape in its messages. */
    static String describe(ScalarType t, long... shape) {
        return label(t) + Arrays.toString(shape);
    }

    /** One kind of test tensor: dtype, shape, and whether it is a non-contiguous (transposed) view. */
    record Item(ScalarType dtype, long[] shape, boolean transposed) {
        /** The tensor of this kind for a seed; transposed items are [rows, cols] views of [cols, rows]. */
        Tensor build(long seed) {
            return transposed ? wideTransposed(dtype, shape[0], shape[1], seed) : wide(dtype, shape, seed);
        }

        String name() {
            return describe(dtype, shape) + (transposed ? " (transposed)" : "");
        }
    }

    /** Every dtype with every shape, plus every dtype with every transposed 2-d shape. */
    static List<Item> items(long[][] shapes, long[][] transposedShapes) {
        List<Item> out = new ArrayList<>();
        for (ScalarType t : DTYPES) {
            for (long[] s : shapes) {
                out.add(new Item(t, s, false));
            }
            for (long[] s : transposedShapes) {
                out.add(new Item(t, s, true));
            }
        }
        return out;
    }
}
