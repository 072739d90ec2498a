package io.mn4j.mpitests;

import io.mn4j.communicator.Communicator;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * The rank side of a test launch: {@code ScenarioMain <resultDir> <suiteClass> [scenario...]}
 * runs the suite's scenarios (all, or the named ones) in order and appends each check to
 * {@code <resultDir>/rank-<r>.tsv} as {@code PASS|FAIL <tab> scenario <tab> check <tab> message}.
 * A scenario that throws is recorded, then the job is ended (other ranks could be waiting in a
 * collective), so the parent sees the failure rather than a hang.
 */
public final class ScenarioMain {
    /** The first field of a result line. */
    static final String PASS = "PASS", FAIL = "FAIL";

    private ScenarioMain() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        ScenarioSuite suite = (ScenarioSuite) Class.forName(args[1]).getDeclaredConstructor().newInstance();
        List<String> only = Arrays.asList(args).subList(2, args.length);
        Communicator world = Communicator.world();
        Path out = dir.resolve("rank-" + world.rank() + ".tsv");
        Check check = new Check();
        for (Map.Entry<String, Scenario> e : suite.scenarios().entrySet()) {
            if (!only.isEmpty() && !only.contains(e.getKey())) {
                continue;
            }
            check.begin(e.getKey());
            try {
                e.getValue().run(world, check);
            } catch (Throwable t) {
                check.failed("unexpected exception", t);
                write(out, check.drain());
                throw t;
            }
            write(out, check.drain());
        }
        world.barrier();
        Communicator.shutdown();
    }

    private static void write(Path file, List<Check.Outcome> outcomes) throws IOException {
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(file, StandardCharsets.UTF_8,
                StandardOpenOption.CREATE, StandardOpenOption.APPEND))) {
            for (Check.Outcome o : outcomes) {
                w.println((o.passed() ? PASS : FAIL) + "\t" + o.scenario() + "\t" + o.name() + "\t"
                        + o.message().replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t"));
            }
        }
    }
}
