/**
 * Harness for tests that run under real {@code mpirun}: a JUnit side that launches jobs with a
 * timeout ({@link io.mn4j.mpitests.MpiLauncher}), and a rank side that runs many scenarios in one
 * launch ({@link io.mn4j.mpitests.ScenarioMain}) and writes each rank's checks to its own file.
 */
package io.mn4j.mpitests;
