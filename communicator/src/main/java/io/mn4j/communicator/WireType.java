package io.mn4j.communicator;

import mpi.Datatype;
import mpi.MPI;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * The tensor dtypes mn4j can put on the wire, with a stable code for the message header and the
 * way each is reduced: directly with an MPI datatype, or through a wider staging dtype where MPI's
 * Java bindings have no matching arithmetic type (int8, uint8, bool, float16, bfloat16).
 */
enum WireType {
    FLOAT32(1, ScalarType.Float, "float32", 4, null),
    FLOAT64(2, ScalarType.Double, "float64", 8, null),
    INT32(3, ScalarType.Int, "int32", 4, null),
    INT64(4, ScalarType.Long, "int64", 8, null),
    // MPI.BYTE is MPI_BYTE, for which MPI defines no arithmetic: Open MPI's SUM on it gives wrong
    // results for negative sums (seen: -4 came back as -1), so int8 is reduced as int32 like uint8.
    INT8(5, ScalarType.Char, "int8", 1, ScalarType.Int),
    UINT8(6, ScalarType.Byte, "uint8", 1, ScalarType.Int),
    BOOL(7, ScalarType.Bool, "bool", 1, ScalarType.Int),
    FLOAT16(8, ScalarType.Half, "float16", 2, ScalarType.Float),
    BFLOAT16(9, ScalarType.BFloat16, "bfloat16", 2, ScalarType.Float);

    final int code;
    final ScalarType scalarType;
    final String label;
    final int elementSize;
    /** Dtype to reduce in when MPI has no datatype for this one; null when MPI has one. */
    final ScalarType reduceAs;
    /** Created once: options per received tensor would cost a native allocation each. */
    private volatile TensorOptions options;

    WireType(int code, ScalarType scalarType, String label, int elementSize, ScalarType reduceAs) {
        this.code = code;
        this.scalarType = scalarType;
        this.label = label;
        this.elementSize = elementSize;
        this.reduceAs = reduceAs;
    }

    /**
     * CPU tensor options of this dtype, shared. Retained, so that a {@code PointerScope} that is
     * open when they are first created never frees them.
     */
    TensorOptions options() {
        TensorOptions o = options;
        if (o == null) {
            synchronized (this) {
                o = options;
                if (o == null) {
                    o = new TensorOptions(scalarType);
                    o.retainReference();
                    options = o;
                }
            }
        }
        return o;
    }

    boolean isFloatingPoint() {
        return this == FLOAT32 || this == FLOAT64 || this == FLOAT16 || this == BFLOAT16;
    }

    /** The MPI datatype of a dtype reduced directly (not through {@link #reduceAs}). */
    Datatype mpiType() {
        switch (this) {
            case FLOAT32: return MPI.FLOAT;
            case FLOAT64: return MPI.DOUBLE;
            case INT32: return MPI.INT;
            case INT64: return MPI.LONG;
            default: throw new IllegalStateException(label + " is reduced as " + reduceAs);
        }
    }

    static WireType of(ScalarType t) {
        for (WireType w : values()) {
            if (w.scalarType.value == t.value) {
                return w;
            }
        }
        throw new CommunicationException("dtype " + t + " cannot be communicated; supported: "
                + "float32, float64, int32, int64, int8, uint8, bool, float16, bfloat16");
    }

    /** By code: codes run from 1 without gaps (index 0 unused). */
    private static final WireType[] BY_CODE = byCode();

    private static WireType[] byCode() {
        WireType[] all = values();
        WireType[] byCode = new WireType[all.length + 1];
        for (WireType w : all) {
            byCode[w.code] = w;
        }
        return byCode;
    }

    /** The dtype of a code, or null for a code that is none. */
    static WireType findCode(long code) {
        return code >= 1 && code < BY_CODE.length ? BY_CODE[(int) code] : null;
    }

    static WireType ofCode(long code) {
        WireType w = findCode(code);
        if (w != null) {
            return w;
        }
        throw new CommunicationException("received a message with unknown dtype code " + code
                + " (corrupt header, or a peer that is not mn4j)");
    }
}
