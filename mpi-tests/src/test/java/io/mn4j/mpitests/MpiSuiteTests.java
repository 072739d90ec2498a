package io.mn4j.mpitests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;

/**
 * Turns launches of a scenario suite into JUnit dynamic tests: one container per rank count,
 * one test per scenario that passes when every rank recorded every check of it as passed.
 */
public final class MpiSuiteTests {
    private MpiSuiteTests() {
    }

    public static Stream<DynamicNode> forRanks(Class<? extends ScenarioSuite> suite, long timeoutSeconds,
            int... rankCounts) {
        return forRanks(suite, timeoutSeconds, Map.of(), rankCounts);
    }

    /** As {@link #forRanks(Class, long, int...)}, with variables added to the ranks' environment. */
    public static Stream<DynamicNode> forRanks(Class<? extends ScenarioSuite> suite, long timeoutSeconds, Map<String, String> env,
            int... rankCounts) {
        List<DynamicNode> nodes = new ArrayList<>();
        for (int np : rankCounts) {
            String name = "np=" + np + (env.isEmpty() ? "" : " " + new TreeMap<>(env));
            nodes.add(DynamicContainer.dynamicContainer(name, launch(suite, np, timeoutSeconds, env)));
        }
        return nodes.stream();
    }

    /**
     * One launch of {@code suite} with {@code np} ranks started by {@code launch} (on a simulated
     * cluster, say), as a container named after the launch.
     */
    public static DynamicNode forLaunch(MpiLauncher.Launch launch, Class<? extends ScenarioSuite> suite, long timeoutSeconds,
            Map<String, String> env, int np) {
        return DynamicContainer.dynamicContainer("np=" + np + " (" + launch + ")", launch(launch, suite, np, timeoutSeconds, env));
    }

    private static Stream<DynamicNode> launch(Class<? extends ScenarioSuite> suite, int np, long timeout, Map<String, String> env) {
        return launch(MpiLauncher.LOCAL, suite, np, timeout, env);
    }

    private static Stream<DynamicNode> launch(MpiLauncher.Launch launcher, Class<? extends ScenarioSuite> suite, int np, long timeout,
            Map<String, String> env) {
        MpiLauncher.Result result;
        try {
            result = MpiLauncher.runSuite(launcher, np, suite, timeout, env);
        } catch (Exception e) {
            return Stream.of(DynamicTest.dynamicTest("launch", () -> fail("could not launch mpirun", e)));
        }
        Map<String, List<String>> failures = new LinkedHashMap<>();
        Map<String, Integer> passes = new LinkedHashMap<>();
        result.rankLines().forEach((rank, lines) -> {
            for (String line : lines) {
                String[] f = line.split("\t", 4);
                if (f.length < 3) {
                    continue;
                }
                failures.computeIfAbsent(f[1], k -> new ArrayList<>());
                if (f[0].equals(ScenarioMain.PASS)) {
                    passes.merge(f[1], 1, Integer::sum);
                } else {
                    failures.get(f[1]).add("rank " + rank + " " + f[2] + ": "
                            + (f.length > 3 ? f[3].replace("\\n", "\n").replace("\\t", "\t") : ""));
                }
            }
        });
        List<DynamicNode> tests = new ArrayList<>();
        MpiLauncher.Result r = result;
        tests.add(DynamicTest.dynamicTest("job completed", () -> {
            assertFalse(r.timedOut(), () -> "job hung:\n" + r.describe());
            assertEquals(0, r.exitCode(), () -> "job failed:\n" + r.describe());
        }));
        try {
            ScenarioSuite instance = suite.getDeclaredConstructor().newInstance();
            for (String name : instance.scenarios().keySet()) {
                tests.add(DynamicTest.dynamicTest(name, () -> {
                    List<String> f = failures.get(name);
                    if (f == null) {
                        fail("scenario did not report on any rank:\n" + r.describe());
                    }
                    if (!f.isEmpty()) {
                        fail(String.join("\n", f));
                    }
                    if (passes.getOrDefault(name, 0) == 0) {
                        fail("scenario recorded no check");
                    }
                }));
            }
        } catch (ReflectiveOperationException e) {
            tests.add(DynamicTest.dynamicTest("suite", () -> fail(e)));
        }
        return tests.stream();
    }
}
