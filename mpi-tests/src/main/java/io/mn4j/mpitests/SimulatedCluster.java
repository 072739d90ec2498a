package io.mn4j.mpitests;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * A cluster of hosts on this machine made by {@code scripts/cluster} (network namespaces, each with
 * its own host name, {@code /tmp} and {@code /dev/shm}), for tests that run real jobs across hosts.
 * Made with a name of its own, so that several test runs can have clusters at once, and torn down
 * by {@link #close()} or, should the test JVM end first, by a shutdown hook. Launches on it
 * ({@link #slots(int...)}) keep their files in {@code target/cluster-runs} of the working
 * directory: outside {@code /tmp}, where every host can write them (a cluster's shared file system).
 */
public final class SimulatedCluster implements AutoCloseable {
    /** How long a command of the script may take (making the cluster takes about a second). */
    private static final long SCRIPT_TIMEOUT_SECONDS = 120;

    private final String name;
    private final int hosts;
    private final Thread downAtExit;
    private boolean closed;

    private SimulatedCluster(String name, int hosts) {
        this.name = name;
        this.hosts = hosts;
        this.downAtExit = new Thread(this::close, "cluster " + name + " down");
    }

    /** What a command of the script did. */
    public record Outcome(int exitCode, String output) {
    }

    /**
     * Makes a cluster of {@code hosts} hosts named {@code name}.
     *
     * @throws IllegalStateException with the script's own words when it cannot be made (not root,
     *     no {@code ip}, namespaces refused): a test must fail on that, not skip
     */
    public static SimulatedCluster up(String name, int hosts, String... options) {
        SimulatedCluster c = new SimulatedCluster(name, hosts);
        Runtime.getRuntime().addShutdownHook(c.downAtExit);
        List<String> args = new ArrayList<>(List.of("up", "--hosts", String.valueOf(hosts), "--owner",
                String.valueOf(ProcessHandle.current().pid())));
        args.addAll(Arrays.asList(options));
        Outcome o = c.script(args.toArray(String[]::new));
        if (o.exitCode() != 0) {
            c.close();
            throw new IllegalStateException("cannot make the simulated cluster " + name + " (scripts/cluster up exited with "
                    + o.exitCode() + "):\n" + o.output());
        }
        return c;
    }

    /**
     * A cluster name unique on this machine: {@code tag} after this JVM's process id, so that
     * concurrent test runs (and the test classes of one run) never share one.
     */
    public static String uniqueName(String tag) {
        return "t" + Long.toString(ProcessHandle.current().pid(), 36) + tag;
    }

    /** The script, {@code scripts/cluster} of the checkout (tests run in a module folder). */
    public static Path script() {
        for (Path d = Path.of("").toAbsolutePath(); d != null; d = d.getParent()) {
            Path s = d.resolve("scripts").resolve("cluster");
            if (Files.isExecutable(s)) {
                return s;
            }
        }
        throw new IllegalStateException("no executable scripts/cluster in " + Path.of("").toAbsolutePath() + " or above");
    }

    /** Runs {@code scripts/cluster --name NAME args...}, its output and errors together. */
    public Outcome script(String... args) {
        List<String> cmd = new ArrayList<>(List.of(script().toString(), "--name", name));
        cmd.addAll(Arrays.asList(args));
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            byte[] out = p.getInputStream().readAllBytes();
            if (!p.waitFor(SCRIPT_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return new Outcome(-1, String.join(" ", cmd) + " did not end within " + SCRIPT_TIMEOUT_SECONDS + " s");
            }
            return new Outcome(p.exitValue(), new String(out, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted running " + cmd, e);
        }
    }

    /** As {@link #script(String...)}, failing unless the command exits with 0. */
    public String require(String... args) {
        Outcome o = script(args);
        if (o.exitCode() != 0) {
            throw new IllegalStateException("scripts/cluster --name " + name + " " + String.join(" ", args) + " exited with "
                    + o.exitCode() + ":\n" + o.output());
        }
        return o.output();
    }

    public String name() {
        return name;
    }

    public int hosts() {
        return hosts;
    }

    /** Host {@code i}'s name (its {@code hostname}). */
    public String hostName(int i) {
        return name + "-h" + i;
    }

    /** Where host {@code i}'s {@code /tmp} is on this machine. */
    public Path hostTmp(int i) {
        return Path.of(require("tmpdir", String.valueOf(i)).strip());
    }

    /**
     * Launches with {@code perHost[i]} ranks on host i (ranks fill host 0 first): mpirun on host 0
     * with the cluster's hostfile, TCP between hosts and shared memory within one, and the
     * environment variables of the launch forwarded to every host.
     */
    public MpiLauncher.Launch slots(int... perHost) {
        String spec = Arrays.stream(perHost).mapToObj(String::valueOf).collect(Collectors.joining(","));
        return new MpiLauncher.Launch() {
            @Override
            public List<String> mpirun(int ranks, Set<String> environment) {
                List<String> cmd = new ArrayList<>(List.of(script().toString(), "--name", name, "mpirun", "--slots", spec, "--",
                        "-np", String.valueOf(ranks)));
                cmd.addAll(MpiLauncher.SHARED_CORE_FLAGS);
                for (String variable : environment) {
                    cmd.addAll(List.of("-x", variable));
                }
                return cmd;
            }

            @Override
            public Path newRunDir(String prefix) throws IOException {
                return sharedDir(prefix);
            }

            @Override
            public String toString() {
                return spec.replace(",", "+") + " ranks on " + name;
            }
        };
    }

    /**
     * A new directory {@code prefix...} that every host can read and write: under
     * {@code target/cluster-runs} of the working directory, not under {@code /tmp}, which each
     * host has for itself.
     */
    public static Path sharedDir(String prefix) throws IOException {
        return Files.createTempDirectory(Files.createDirectories(Path.of("target", "cluster-runs").toAbsolutePath()), prefix);
    }

    /** Kills every process on host {@code i}, or with {@code ranksOnly} only the job's ranks there. */
    public String kill(int i, boolean ranksOnly) {
        return signal(i, "KILL", ranksOnly);
    }

    /** Sends {@code signal} (KILL, STOP, ...) to every process on host {@code i}, or only to the job's ranks there. */
    public String signal(int i, String signal, boolean ranksOnly) {
        return ranksOnly ? require("kill", String.valueOf(i), signal, "--ranks") : require("kill", String.valueOf(i), signal);
    }

    /** Takes host {@code i}'s network link down or brings it up. */
    public String link(int i, boolean up) {
        return require("link", String.valueOf(i), up ? "up" : "down");
    }

    /** The Java processes running on host {@code i} (a job's ranks), by process id. */
    public List<Long> javaProcesses(int i) {
        try {
            Process p = new ProcessBuilder("ip", "netns", "pids", hostName(i)).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            p.waitFor();
            List<Long> java = new ArrayList<>();
            for (String pid : out.split("\\s+")) {
                Path comm = Path.of("/proc", pid, "comm");
                if (!pid.isEmpty() && Files.exists(comm) && readOrEmpty(comm).strip().equals("java")) {
                    java.add(Long.parseLong(pid));
                }
            }
            return java;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted listing the processes of " + hostName(i), e);
        }
    }

    /** A file of a process that may end meanwhile: empty once it has. */
    private static String readOrEmpty(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException gone) {
            return "";
        }
    }

    /** Tears the cluster down (idempotent); the shutdown hook is no longer needed. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            Runtime.getRuntime().removeShutdownHook(downAtExit);
        } catch (IllegalStateException shuttingDown) {
            // the hook is running or about to: it tears the cluster down
        }
        down();
    }

    private void down() {
        Outcome o = script("down");
        if (o.exitCode() != 0) {
            throw new IllegalStateException("scripts/cluster --name " + name + " down failed:\n" + o.output());
        }
    }
}
