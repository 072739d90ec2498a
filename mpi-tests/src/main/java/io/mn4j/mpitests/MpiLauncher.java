package io.mn4j.mpitests;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.pytorch.global.torch;

/**
 * Launches {@code mpirun -np N java ... <main> <args>} with this JVM's {@code java} and class path,
 * with a timeout that kills the whole job, and collects what each rank wrote. Output of the ranks
 * goes to a file (never to this JVM's stdout, which Surefire uses as its channel).
 */
public final class MpiLauncher {
    /** What a launch left behind. */
    public record Result(int ranks, int exitCode, boolean timedOut, double seconds, String output,
            Map<Integer, List<String>> rankLines, Path dir) {

        /** Every rank's output and result lines, for failure messages. */
        public String describe() {
            StringBuilder sb = new StringBuilder();
            sb.append("mpirun -np ").append(ranks).append(timedOut ? " TIMED OUT" : " exit " + exitCode)
                    .append(" after ").append(String.format("%.1f", seconds)).append(" s, files in ").append(dir)
                    .append("\n--- output ---\n")
                    .append(output);
            rankLines.forEach((r, lines) -> sb.append("\n--- rank ").append(r).append(" ---\n")
                    .append(String.join("\n", lines)));
            return sb.toString();
        }
    }

    /**
     * Where and how a job starts: the command up to {@code java} (mpirun and its flags, which must
     * pass the named environment variables on to every rank) and a directory for a launch's files
     * that every rank can write.
     */
    public interface Launch {
        /** The words before {@code java}: {@code mpirun -np <ranks>} and flags. */
        List<String> mpirun(int ranks, Set<String> environment);

        /** A new directory for one launch's files, named {@code prefix...}. */
        Path newRunDir(String prefix) throws IOException;
    }

    /**
     * mpirun's flags for more ranks than cores on a busy machine, as {@code scripts/mn4j-run} gives
     * them: a slot per rank whatever the cores, no binding, ranks that yield while they wait.
     */
    public static final List<String> SHARED_CORE_FLAGS = List.of("--oversubscribe", "--bind-to", "none", "--mca",
            "mpi_yield_when_idle", "1");

    /** mpirun on this machine alone: shared memory between the ranks, files in the temporary directory. */
    public static final Launch LOCAL = new Launch() {
        @Override
        public List<String> mpirun(int ranks, Set<String> environment) {
            List<String> cmd = new ArrayList<>(List.of("mpirun", "-np", String.valueOf(ranks)));
            cmd.addAll(SHARED_CORE_FLAGS);
            cmd.addAll(List.of("--mca", "btl", "self,vader"));
            return cmd;
        }

        @Override
        public Path newRunDir(String prefix) throws IOException {
            return Files.createTempDirectory(prefix);
        }

        @Override
        public String toString() {
            return "one host";
        }
    };

    private static boolean warmedUp;

    private MpiLauncher() {
    }

    /**
     * Runs {@link ScenarioMain} with a suite under {@code mpirun -np ranks}, in a new directory
     * {@code mn4j-<suite>-np<ranks>-*} of {@code java.io.tmpdir}: deleted when the job ended with 0
     * and no rank recorded a failed check; otherwise kept for a look at what the ranks left
     * (crash reports, logs), and {@link Result#describe()} names it.
     */
    public static Result runSuite(int ranks, Class<? extends ScenarioSuite> suite, long timeoutSeconds,
            String... scenarios) throws IOException, InterruptedException {
        return runSuite(ranks, suite, timeoutSeconds, Map.of(), scenarios);
    }

    /**
     * As {@link #runSuite(int, Class, long, String...)}, with variables added to the environment
     * of {@code mpirun}, which passes it on to the ranks.
     */
    public static Result runSuite(int ranks, Class<? extends ScenarioSuite> suite, long timeoutSeconds, Map<String, String> env,
            String... scenarios) throws IOException, InterruptedException {
        return runSuite(LOCAL, ranks, suite, timeoutSeconds, env, scenarios);
    }

    /** As {@link #runSuite(int, Class, long, Map, String...)}, started by {@code launch}, its files in {@code launch}'s directory. */
    public static Result runSuite(Launch launch, int ranks, Class<? extends ScenarioSuite> suite, long timeoutSeconds,
            Map<String, String> env, String... scenarios) throws IOException, InterruptedException {
        Path dir = launch.newRunDir("mn4j-" + suite.getSimpleName() + "-np" + ranks + "-");
        List<String> args = new ArrayList<>(List.of(dir.toString(), suite.getName()));
        args.addAll(List.of(scenarios));
        Result result = run(launch, ranks, ScenarioMain.class.getName(), args, dir, timeoutSeconds, env, job -> {
        });
        boolean anyFailed = result.rankLines().values().stream().flatMap(List::stream).anyMatch(l -> l.startsWith(ScenarioMain.FAIL + "\t"));
        if (!result.timedOut() && result.exitCode() == 0 && !anyFailed) {
            deleteRecursively(dir);
        }
        return result;
    }

    /** Runs any main class under {@code mpirun -np ranks}; results are read from {@code dir}. */
    public static Result run(int ranks, String mainClass, List<String> args, Path dir, long timeoutSeconds)
            throws IOException, InterruptedException {
        return run(ranks, mainClass, args, dir, timeoutSeconds, job -> {
        });
    }

    /**
     * As {@link #run(int, String, List, Path, long)}, handing the running {@code mpirun} process to
     * {@code whileRunning} first (to signal it, for example); the timeout counts from the start.
     */
    public static Result run(int ranks, String mainClass, List<String> args, Path dir, long timeoutSeconds,
            Consumer<Process> whileRunning) throws IOException, InterruptedException {
        return run(LOCAL, ranks, mainClass, args, dir, timeoutSeconds, Map.of(), whileRunning);
    }

    /**
     * As {@link #run(int, String, List, Path, long, Consumer)}, started by {@code launch} ({@code dir}
     * must be one that every rank can write), with variables added to the ranks' environment.
     */
    public static Result run(Launch launch, int ranks, String mainClass, List<String> args, Path dir, long timeoutSeconds,
            Map<String, String> env, Consumer<Process> whileRunning) throws IOException, InterruptedException {
        warmUpNativeCache();
        Files.createDirectories(dir);
        List<String> cmd = new ArrayList<>(launch.mpirun(ranks, env.keySet()));
        cmd.addAll(List.of("java", "-cp", System.getProperty("java.class.path"),
                "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss4m",
                // A crashing JVM's report goes with the job's files, not into the module folder.
                "-XX:ErrorFile=" + dir.resolve("hs_err_pid%p.log"),
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", mainClass));
        cmd.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().put("OMPI_ALLOW_RUN_AS_ROOT", "1");
        pb.environment().put("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        // The ranks run on the test JVM's java (not whichever is first on PATH), so they see the
        // same Java as the test that checks them. By PATH, not by an absolute path: mpirun
        // recognises a Java job (and adds the library path of mpi_java) by the command "java".
        String javaBin = Path.of(System.getProperty("java.home"), "bin").toString();
        pb.environment().merge("PATH", javaBin, (path, bin) -> bin + File.pathSeparator + path);
        pb.environment().putAll(env);
        File log = dir.resolve("mpirun.log").toFile();
        pb.redirectErrorStream(true).redirectOutput(log);
        long t0 = System.nanoTime();
        Process p = pb.start();
        whileRunning.accept(p);
        long left = timeoutSeconds * 1_000_000_000L - (System.nanoTime() - t0);
        boolean finished = p.waitFor(Math.max(left, 0), TimeUnit.NANOSECONDS);
        if (!finished) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        Map<Integer, List<String>> lines = new TreeMap<>();
        for (int r = 0; r < ranks; r++) {
            Path f = dir.resolve("rank-" + r + ".tsv");
            lines.put(r, Files.exists(f) ? Files.readAllLines(f, StandardCharsets.UTF_8) : List.of());
        }
        String output = Files.readString(log.toPath(), StandardCharsets.UTF_8);
        return new Result(ranks, finished ? p.exitValue() : -1, !finished, seconds, output, lines, dir);
    }

    private static void deleteRecursively(Path dir) throws IOException {
        try (var paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    /**
     * JavaCPP unpacks native libraries on first use and concurrent unpacking corrupts its cache:
     * make sure this JVM has done it before any rank starts.
     */
    private static synchronized void warmUpNativeCache() {
        if (!warmedUp) {
            Loader.load(torch.class);
            warmedUp = true;
        }
    }
}
