package io.mn4j.mpitests.gnn;

import io.mn4j.mpitests.MpiSuiteTests;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

class GnnAggregationTest {
    @TestFactory
    Stream<DynamicNode> aggregation() {
        return MpiSuiteTests.forRanks(GnnAggregationSuite.class, 180, 1, 2, 3, 4);
    }
}
