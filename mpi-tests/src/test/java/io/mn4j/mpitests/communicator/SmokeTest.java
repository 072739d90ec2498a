package io.mn4j.mpitests.communicator;

import io.mn4j.mpitests.MpiSuiteTests;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

class SmokeTest {
    @TestFactory
    Stream<DynamicNode> smoke() {
        return MpiSuiteTests.forRanks(SmokeSuite.class, 120, 1, 2, 3, 4);
    }
}
