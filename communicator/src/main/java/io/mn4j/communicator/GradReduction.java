package io.mn4j.communicator;

import java.util.Objects;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * How {@link Communicator#meanGrad(org.bytedeco.pytorch.Module, GradReduction)} and
 * {@link Communicator#sumGrad(org.bytedeco.pytorch.Module, GradReduction)} reduce gradients over
 * the ranks: the route the data takes and the dtype it travels in.
 *
 * <ul>
 *   <li>{@link #flat()} (the default): one allreduce over all ranks.</li>
 *   <li>{@link #hierarchical()}: ChainerMN's hierarchical communicator. A reduce within each node
 *       (shared memory), an allreduce among one leader per node (the network), a broadcast within
 *       each node: the network carries one gradient per node instead of one per rank.</li>
 *   <li>{@link #in(ScalarType)}: ChainerMN's {@code allreduce_grad_dtype}. The part that crosses
 *       the network travels in float16 or bfloat16 (half the bytes of float32): a reduce-scatter and
 *       an allgather of 16-bit blocks, each block summed in float32 by the rank that owns it; for a
 *       mean the gradients are divided by the ranks before they are rounded, so float16 does not
 *       overflow. Hierarchical reductions reduce and broadcast within a node in the gradients' own
 *       dtype and round only what goes between nodes. {@code in(null)} or {@code in(float32)}
 *       keeps float32 gradients as they are.</li>
 * </ul>
 *
 * <p>Every rank must pass the same reduction; a reduction that differs between ranks, or a dtype
 * other than float32, float16 or bfloat16, is a {@link CommunicationException} on every rank,
 * naming every rank's choice. Immutable.
 */
public final class GradReduction {
    /** The route of the data. */
    public enum Route { FLAT, HIERARCHICAL }

    private static final GradReduction FLAT = new GradReduction(Route.FLAT, null);
    private static final GradReduction HIERARCHICAL = new GradReduction(Route.HIERARCHICAL, null);

    private final Route route;
    private final ScalarType dtype;

    private GradReduction(Route route, ScalarType dtype) {
        this.route = route;
        this.dtype = dtype;
    }

    /** One allreduce over all ranks, in the gradients' dtype: what {@code meanGrad(module)} does. */
    public static GradReduction flat() {
        return FLAT;
    }

    /** Within each node, then among the nodes' leaders, then within each node again. */
    public static GradReduction hierarchical() {
        return HIERARCHICAL;
    }

    /**
     * This route with the data between nodes (flat: between all ranks) in {@code dtype}: float16
     * or bfloat16; null or float32 for the gradients' own dtype.
     */
    public GradReduction in(ScalarType dtype) {
        return new GradReduction(route, dtype == null || dtype == ScalarType.Float ? null : dtype);
    }

    /**
     * Parses {@code flat} or {@code hierarchical} and a dtype name ({@code float32}, {@code float16},
     * {@code bfloat16}), for command-line options; throws an {@link IllegalArgumentException}
     * naming the accepted values otherwise.
     */
    public static GradReduction parse(String route, String dtype) {
        GradReduction r = switch (route) {
            case "flat" -> FLAT;
            case "hierarchical" -> HIERARCHICAL;
            default -> throw new IllegalArgumentException("gradient reduction '" + route + "': use flat or hierarchical");
        };
        return r.in(switch (dtype) {
            case "float32" -> null;
            case "float16" -> ScalarType.Half;
            case "bfloat16" -> ScalarType.BFloat16;
            default -> throw new IllegalArgumentException("gradient dtype '" + dtype + "': use float32, float16 or bfloat16");
        });
    }

    /** The route of the data: flat or hierarchical. */
    public Route route() {
        return route;
    }

    /** The dtype between nodes, or null for the gradients' own. */
    public ScalarType dtype() {
        return dtype;
    }

    /** Whether the data crosses the network in 16 bits. */
    boolean lowPrecision() {
        return dtype != null;
    }

    /** Why this reduction cannot run, or null. */
    String problem() {
        if (dtype == null || dtype == ScalarType.Half || dtype == ScalarType.BFloat16) {
            return null;
        }
        return "unsupported gradient reduction dtype " + dtype + " (use float32, float16 or bfloat16)";
    }

    /** A number that differs for different reductions, for the ranks to compare. */
    long code() {
        return route.ordinal() * 1000L + (dtype == null ? 999 : dtype.value);
    }

    /** The reduction of a {@link #code()}, described for an error message. */
    static String describe(long code) {
        Route r = Route.values()[(int) (code / 1000)];
        long d = code % 1000;
        return r.name().toLowerCase() + (d == 999 ? "" : " in " + dtypeName(d));
    }

    /** The name of a LibTorch dtype by its value. */
    static String dtypeName(long value) {
        for (ScalarType t : ScalarType.values()) {
            if (t.value == value) {
                return t.name();
            }
        }
        return "dtype " + value;
    }

    /** "flat", "hierarchical", "hierarchical in BFloat16", ... */
    @Override
    public String toString() {
        return describe(code());
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GradReduction g && g.route == route && g.dtype == dtype;
    }

    @Override
    public int hashCode() {
        return Objects.hash(route, dtype);
    }
}
