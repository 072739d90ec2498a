package io.mn4j.functions;

/**
 * Message tags of the differentiable functions on one communicator, laid out from its MPI_TAG_UB:
 * caller tags, then the tags of the gradients of gather, scatter and alltoall, then those of the
 * point-to-point gradients, {@code G | tag << o | (k mod 2^o)} for the k-th message of a (peer,
 * tag) pair, which both ends count alike without talking. Layout and limits:
 * {@code functions/README.md}, "How it works".
 */
final class Tags {
    /** Caller tags get at most this many bits: [0, 65536), whatever MPI allows. */
    private static final int MAX_USER_BITS = 16;
    /** Occurrence numbers get at most this many bits (wrapping at 16384). */
    static final int MAX_OCCURRENCE_BITS = 14;
    /** ... and at least this many, at the expense of caller tags when MPI_TAG_UB is small. */
    static final int MIN_OCCURRENCE_BITS = 6;
    /**
     * {@code -Dmn4j.functions.occurrenceBits} lowers the ceiling, so that tests reach the wrap of
     * the occurrence numbers in hundreds of messages instead of tens of thousands.
     */
    private static final String CAP_PROPERTY = "mn4j.functions.occurrenceBits";

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
        this(maxTag, occurrenceBitsCap(System.getProperty(CAP_PROPERTY)));
    }

    /** As {@link #Tags(int)}, with occurrence numbers of at most {@code maxOccurrenceBits} bits. */
    Tags(int maxTag, int maxOccurrenceBits) {
        // Every tag below 2^bits is allowed; the top one of those bits marks gradients.
        int bits = 63 - Long.numberOfLeadingZeros((long) maxTag + 1);
        int shared = bits - 1;
        int occurrence = Math.max(MIN_OCCURRENCE_BITS, Math.min(maxOccurrenceBits, shared - MAX_USER_BITS));
        int user = Math.min(MAX_USER_BITS, shared - occurrence);
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

    /** The ceiling of occurrence bits that {@code -Dmn4j.functions.occurrenceBits} sets (default 14). */
    static int occurrenceBitsCap(String property) {
        if (property == null) {
            return MAX_OCCURRENCE_BITS;
        }
        try {
            int bits = Integer.parseInt(property.trim());
            if (bits >= MIN_OCCURRENCE_BITS && bits <= MAX_OCCURRENCE_BITS) {
                return bits;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException("-D" + CAP_PROPERTY + "=" + property + ": expected a whole number from "
                + MIN_OCCURRENCE_BITS + " to " + MAX_OCCURRENCE_BITS);
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
