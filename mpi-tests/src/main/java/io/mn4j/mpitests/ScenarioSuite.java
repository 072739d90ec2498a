package io.mn4j.mpitests;

import java.util.Map;

/**
 * A named, ordered set of scenarios that one {@code mpirun} launch runs one after the other (a
 * JVM with LibTorch costs seconds to start, so launches are shared). Implementations need a public
 * no-argument constructor.
 */
public interface ScenarioSuite {
    /** Scenarios by name, in the order to run them (use a LinkedHashMap). */
    Map<String, Scenario> scenarios();
}
