package io.mn4j.communicator;

import java.util.List;
import org.bytedeco.pytorch.Tensor;

/**
 * What one rank sends in an exchange (gather, allgather, alltoall, scatter): its tensors by
 * destination rank, wire-ready, with their headers — or, when its input is invalid, the code it
 * sends in their place, so that every peer fails with it rather than wait for a tensor that never
 * comes. Invalid input is found here, before any message is posted: a rank that threw on its own
 * input would leave its peers inside the exchange.
 *
 * @param tensors by destination rank (null where nothing is sent), or null if invalid
 * @param headers the headers of {@code tensors}, same indices
 * @param invalidCode what was wrong, for the peers ({@link #describe}); unused when valid
 * @param problem this rank's own account of what was wrong, or null
 */
record Outgoing(Tensor[] tensors, TensorHeader[] headers, long invalidCode, String problem) {
    /** Invalid codes: a list's length (>= 0), no list, or a tensor that cannot be sent. */
    static final long NO_LIST = -1;
    static final long UNSENDABLE = -2;

    boolean valid() {
        return tensors != null;
    }

    /** Nothing to send (a rank off the root of a scatter). */
    static Outgoing nothing(int size) {
        return new Outgoing(new Tensor[size], new TensorHeader[size], 0, null);
    }

    /** One tensor, sent to every rank r with {@code to[r]}. */
    static Outgoing sameTo(Tensor x, boolean[] to) {
        TensorHeader h;
        try {
            h = headerOf(x);
        } catch (CommunicationException e) {
            return invalid(UNSENDABLE, e.getMessage());
        }
        Tensor w = TensorBytes.wireReady(x);
        Tensor[] tensors = new Tensor[to.length];
        TensorHeader[] headers = new TensorHeader[to.length];
        for (int r = 0; r < to.length; r++) {
            if (to[r]) {
                tensors[r] = w;
                headers[r] = h;
            }
        }
        return new Outgoing(tensors, headers, 0, null);
    }

    /** One tensor per rank: {@code xs.get(r)} goes to rank r. */
    static Outgoing perRank(List<Tensor> xs, int size) {
        if (xs == null || xs.size() != size) {
            return invalid(xs == null ? NO_LIST : xs.size(), null);
        }
        Tensor[] tensors = new Tensor[size];
        TensorHeader[] headers = new TensorHeader[size];
        for (int r = 0; r < size; r++) {
            try {
                headers[r] = headerOf(xs.get(r));
            } catch (CommunicationException e) {
                return invalid(UNSENDABLE, "the tensor for rank " + r + ": " + e.getMessage());
            }
            tensors[r] = TensorBytes.wireReady(xs.get(r));
        }
        return new Outgoing(tensors, headers, 0, null);
    }

    /** What a peer passed, from its invalid code. */
    static String describe(long code) {
        if (code == UNSENDABLE) {
            return "a tensor that cannot be sent (null, not dense, a dtype mn4j does not carry, or over "
                    + TensorHeader.MAX_DIMS + " dimensions; from the object operations, an object that could"
                    + " not be serialized)";
        }
        return code == NO_LIST ? "no list (null)" : "a list of " + code;
    }

    private static Outgoing invalid(long code, String problem) {
        return new Outgoing(null, null, code, problem);
    }

    /** The header of a tensor that can be sent; otherwise a CommunicationException saying why. */
    static TensorHeader headerOf(Tensor t) {
        if (t == null) {
            throw new CommunicationException("a null tensor");
        }
        return TensorHeader.of(t); // the same as its wire-ready copy's: shape and dtype
    }
}
