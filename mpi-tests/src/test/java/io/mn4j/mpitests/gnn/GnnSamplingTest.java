package io.mn4j.mpitests.gnn;

import io.mn4j.mpitests.MpiSuiteTests;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

class GnnSamplingTest {
    @TestFactory
    Stream<DynamicNode> sampling() {
        return MpiSuiteTests.forRanks(GnnSamplingSuite.class, 240, 1, 2, 3, 4);
    }
}
