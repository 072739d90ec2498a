package io.mn4j.mpitests.functions;

import io.mn4j.mpitests.MpiSuiteTests;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/** The function suites under mpirun with 1, 2, 3 and 4 ranks. */
class FunctionsMpiTest {
    @TestFactory
    Stream<DynamicNode> functions() {
        return MpiSuiteTests.forRanks(FunctionsSuite.class, 240, 1, 2, 3, 4);
    }

    @TestFactory
    Stream<DynamicNode> models() {
        return MpiSuiteTests.forRanks(ModelSuite.class, 300, 1, 2, 3, 4);
    }
}
