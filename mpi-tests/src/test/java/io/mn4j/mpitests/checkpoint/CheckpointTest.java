package io.mn4j.mpitests.checkpoint;

import io.mn4j.mpitests.MpiSuiteTests;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

class CheckpointTest {
    @TestFactory
    Stream<DynamicNode> checkpoints() {
        return MpiSuiteTests.forRanks(CheckpointSuite.class, 180, 2, 3);
    }
}
