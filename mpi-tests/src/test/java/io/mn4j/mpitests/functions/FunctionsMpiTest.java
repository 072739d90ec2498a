package io.mn4j.mpitests.functions;

import io.mn4j.mpitests.MpiSuiteTests;
import io.mn4j.mpitests.Scenario;
import io.mn4j.mpitests.ScenarioSuite;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/**
 * The function suites under mpirun with 1, 2, 3 and 4 ranks: one launch per rank count for both
 * suites (a launch costs seconds of JVM and MPI start-up).
 */
class FunctionsMpiTest {
    /** {@link FunctionsSuite} then {@link ModelSuite}, in one launch. */
    public static class All implements ScenarioSuite {
        @Override
        public Map<String, Scenario> scenarios() {
            Map<String, Scenario> s = new LinkedHashMap<>(new FunctionsSuite().scenarios());
            s.putAll(new ModelSuite().scenarios());
            return s;
        }
    }

    @TestFactory
    Stream<DynamicNode> functionsAndModels() {
        return MpiSuiteTests.forRanks(All.class, 420, 1, 2, 3, 4);
    }

    /** The wrap of gradient tags, with a range of 256 messages instead of 16384. */
    @TestFactory
    Stream<DynamicNode> gradientTags() {
        return MpiSuiteTests.forRanks(GradientTagsSuite.class, 300,
                Map.of("JAVA_TOOL_OPTIONS", "-Dmn4j.functions.occurrenceBits=8"), 2, 3);
    }

    /** Gradient reduction routes and dtypes, in launches of their own (the launch above is long already). */
    @TestFactory
    Stream<DynamicNode> gradientReductions() {
        return MpiSuiteTests.forRanks(GradReductionSuite.class, 180, 1, 2, 3, 4);
    }
}
