package io.mn4j.functions;

/**
 * Message tags of the differentiable point-to-point functions.
 *
 * <p>A forward message uses the caller's tag. The gradient that travels back for it uses a tag
 * derived from that tag and from the message's occurrence number on its (peer, tag) pair: the
 * k-th send from rank a to rank b with tag t matches the k-th receive on b from a with tag t
 * (MPI does not let messages on one pair and tag overtake each other), so both ends compute the
 * same k without talking. Each gradient therefore has a tag of its own, and gradients may be sent
 * and received in any order during backward without being mixed up.
 */
final class Tags {
    /** Caller tags must lie in [0, USER_LIMIT). */
    static final int USER_LIMIT = 1 << 16;
    private static final int OCCURRENCE_BITS = 14;
    private static final int GRADIENT_BIT = 1 << 30;

    private Tags() {
    }

    /** The tag of the gradient of the {@code occurrence}-th message with tag {@code tag}. */
    static int gradient(int tag, int occurrence) {
        return GRADIENT_BIT | (tag << OCCURRENCE_BITS) | (occurrence & ((1 << OCCURRENCE_BITS) - 1));
    }

    static void checkUserTag(String op, int tag) {
        if (tag < 0 || tag >= USER_LIMIT) {
            throw new IllegalArgumentException(op + ": tag " + tag + " is outside [0, " + USER_LIMIT
                    + "); higher tags are reserved for the gradients travelling back");
        }
    }
}
