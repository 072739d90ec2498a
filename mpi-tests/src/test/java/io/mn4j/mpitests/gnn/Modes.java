package io.mn4j.mpitests.gnn;

import io.mn4j.gnn.shard.AggregationMode;
import java.util.EnumSet;
import java.util.Set;

/** Which aggregation modes a comparison with one process applies to. */
final class Modes {
    private Modes() {
    }

    /**
     * The modes whose every pass computes what one process computes: all but
     * {@link AggregationMode#PIPELINED}, whose training passes read the previous epoch's boundary
     * rows (its own scenarios check that).
     */
    static Set<AggregationMode> exact() {
        return EnumSet.complementOf(EnumSet.of(AggregationMode.PIPELINED));
    }
}
