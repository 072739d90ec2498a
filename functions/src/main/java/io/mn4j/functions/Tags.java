package io.mn4j.functions;

/**
 * Message tags of the differentiable point-to-point functions on one communicator.
 *
 * <p>A forward message uses the caller's tag. The gradient that travels back for it uses a tag
 * derived from that tag and from the message's occurrence number on its (peer, tag) pair: the
 * k-th send from rank a to rank b with tag t matches the k-th receive on b from a with tag t
 * (MPI does not let messages on one pair and tag overtake each other), so both ends compute the
 * same k without talking. Each gradient therefore has a tag of its own, and gradients may be sent
 * and received in any order during backward without being mixed up.
 *
 * <p>Layout: a gradient tag is {@code G | tag << o | (k mod 2^o)}, where G is the highest power of
 * two that MPI_TAG_UB allows (so gradient tags never meet caller tags) and the bits below it are
 * shared between caller tags (u bits) and occurrence numbers (o bits). MPI_TAG_UB depends on the
 * MPI library and network: 2^31-1 over Open MPI's shared memory gives u = 16, o = 14 (tags below
 * 65536, occurrences modulo 16384); UCX's 2^23-1 gives u = 16, o = 6; the standard's minimum,
 * 32767, gives u = 8, o = 6. Occurrence numbers wrap around: gradients stay apart as long as
 * fewer than 2^o messages of one (peer, tag) pair await their backward at the same time.
 *
 * <p>The gradients of gather, scatter and alltoall travel point to point too, with tags in
 * [userLimit, G), which neither caller tags nor gradient tags use: the tag of the gradient of the
 * k-th floating-point tensor rank a sent rank b in those collectives is {@code userLimit + k mod
 * (G - userLimit)} (at least 16128 values, 2^30 - 2^16 with Open MPI's shared memory); a and b
 * count those messages alike because collectives are called in the same order on every rank.
 */
final class Tags {
    /** Caller tags get at most this many bits: [0, 65536), whatever MPI allows. */
    private static final int MAX_USER_BITS = 16;
    /** Occurrence numbers get at most this many bits (wrapping at 16384). */
    private static final int MAX_OCCURRENCE_BITS = 14;
    /** ... and at least this many, at the expense of caller tags when MPI_TAG_UB is small. */
    private static final int MIN_OCCURRENCE_BITS = 6;

    private final int maxTag;
    private final int userLimit;
    private final int occurrenceBits;
    private final int gradientBit;

    /**
     * The layout for tags in [0, {@code maxTag}] (MPI_TAG_UB).
     *
     * @throws IllegalArgumentException if {@code maxTag} leaves no room for one caller tag bit
     *     next to the occurrence bits (MPI promises at least 32767, which is enough)
     */
    Tags(int maxTag) {
        // Every tag below 2^bits is allowed; the top one of those bits marks gradients.
        int bits = 63 - Long.numberOfLeadingZeros((long) maxTag + 1);
        int shared = bits - 1;
        int occurrence = Math.max(MIN_OCCURRENCE_BITS, Math.min(MAX_OCCURRENCE_BITS, shared - MAX_USER_BITS));
        int user = shared - occurrence;
        if (user < 1) {
            throw new IllegalArgumentException("MPI_TAG_UB " + maxTag + " is too small for the gradient tags of"
                    + " the differentiable functions: they need " + (MIN_OCCURRENCE_BITS + 2)
                    + " bits at least (a gradient bit, " + MIN_OCCURRENCE_BITS + " occurrence bits and one tag bit)");
        }
        this.maxTag = maxTag;
        this.userLimit = 1 << user;
        this.occurrenceBits = occurrence;
        this.gradientBit = 1 << shared;
    }

    /** Caller tags must lie in [0, userLimit()). */
    int userLimit() {
        return userLimit;
    }

    /** Occurrence numbers are taken modulo this. */
    int occurrences() {
        return 1 << occurrenceBits;
    }

    /** The tag of the gradient of the {@code occurrence}-th message with tag {@code tag}. */
    int gradient(int tag, int occurrence) {
        return gradientBit | (tag << occurrenceBits) | (occurrence & (occurrences() - 1));
    }

    /** The tag of the gradient of the {@code occurrence}-th collective message on a (sender, receiver) pair. */
    int collectiveGradient(int occurrence) {
        return userLimit + Math.floorMod(occurrence, gradientBit - userLimit);
    }

    void checkUserTag(String op, int tag) {
        if (tag < 0 || tag >= userLimit) {
            throw new IllegalArgumentException(op + ": tag " + tag + " is outside [0, " + userLimit
                    + "); higher tags are reserved for the gradients travelling back (MPI_TAG_UB of this MPI is "
                    + maxTag + ", which leaves caller tags " + Integer.numberOfTrailingZeros(userLimit)
                    + " bits and occurrence numbers " + occurrenceBits + ")");
        }
    }
}
