package io.mn4j.mpitests.gnn;

import io.mn4j.mpitests.MpiSuiteTests;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

class GnnInputTest {
    @TestFactory
    Stream<DynamicNode> badInput() {
        return MpiSuiteTests.forRanks(GnnInputSuite.class, 180, 1, 2, 3);
    }
}
