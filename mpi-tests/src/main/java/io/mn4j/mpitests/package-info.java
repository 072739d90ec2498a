/**
 * Harness for tests that run under real {@code mpirun}: a JUnit side that launches jobs with a
 * timeout ({@link io.mn4j.mpitests.MpiLauncher}), and a rank side that runs many scenarios in one
 * launch ({@link io.mn4j.mpitests.ScenarioMain}) and writes each rank's checks to its own file.
 * Jobs start on this machine alone ({@link io.mn4j.mpitests.MpiLauncher#LOCAL}) or across the hosts
 * of a simulated cluster ({@link io.mn4j.mpitests.SimulatedCluster}).
 */
package io.mn4j.mpitests;
