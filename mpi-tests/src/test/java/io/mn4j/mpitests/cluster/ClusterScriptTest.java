package io.mn4j.mpitests.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.mpitests.SimulatedCluster;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code scripts/cluster} itself: hosts with their own names, addresses and {@code /tmp}; an
 * idempotent {@code up} and a {@code down} that leaves nothing; two clusters at once; shaped links;
 * clear errors; clusters of test runs that died removed by the next {@code up}.
 */
class ClusterScriptTest {
    private static final Pattern SUBNET = Pattern.compile("hosts on (10\\.213\\.\\d+\\.0/24)");

    /** Runs a command (no shell), its output and errors together. */
    private static SimulatedCluster.Outcome command(List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), () -> cmd + " did not end");
        return new SimulatedCluster.Outcome(p.exitValue(), out);
    }

    private static List<String> namespaces() throws Exception {
        return command(List.of("ip", "netns", "list")).output().lines().map(l -> l.split(" ")[0]).toList();
    }

    private static String subnet(SimulatedCluster c) {
        Matcher m = SUBNET.matcher(c.require("status"));
        assertTrue(m.find(), () -> "status names no subnet: " + c.require("status"));
        return m.group(1);
    }

    @Test
    void hostsHaveTheirOwnNamesAddressesAndTmp() throws Exception {
        SimulatedCluster c = SimulatedCluster.up(SimulatedCluster.uniqueName("s"), 3);
        Path state;
        try (c) {
            assertTrue(c.require("up", "--hosts", "3").contains("already up"), "a second up changes nothing");
            assertTrue(namespaces().containsAll(List.of(c.name() + "-sw", c.hostName(0), c.hostName(1), c.hostName(2))));
            String net = subnet(c);
            for (int h = 0; h < 3; h++) {
                assertEquals(c.hostName(h), c.require("exec", String.valueOf(h), "hostname").strip());
                String addresses = c.require("exec", String.valueOf(h), "ip", "-br", "addr");
                String mine = net.replace(".0/24", "." + (h + 1) + "/24");
                assertTrue(addresses.contains(mine), () -> "host has " + mine + ": " + addresses);
                assertEquals(2, addresses.lines().count(), () -> "lo and the cluster link only: " + addresses);
            }
            c.require("exec", "1", "sh", "-c", "echo from-h1 > /tmp/only-here");
            assertEquals("from-h1", c.require("exec", "1", "cat", "/tmp/only-here").strip(), "files stay between commands");
            assertEquals("from-h1", Files.readString(c.hostTmp(1).resolve("only-here")).strip());
            assertNotEquals(0, c.script("exec", "0", "cat", "/tmp/only-here").exitCode(), "host 0 does not see host 1's /tmp");
            assertFalse(Files.exists(Path.of("/tmp/only-here")), "nor does this machine");
            String ping = c.require("mpirun", "--slots", "1,1,1", "--", "-np", "3", "hostname");
            assertEquals(List.of(c.hostName(0), c.hostName(1), c.hostName(2)), ping.lines().sorted().toList(), "one rank per host");
            state = c.hostTmp(0).getParent().getParent();
        }
        List<String> left = namespaces();
        assertTrue(left.stream().noneMatch(n -> n.startsWith(c.name() + "-")), () -> "namespaces left: " + left);
        assertFalse(Files.exists(state), "down removes the hosts' files");
        assertEquals(0, c.script("down").exitCode(), "down again is fine");
        assertNotEquals(0, c.script("status").exitCode(), "status says down");
    }

    @Test
    void twoClustersAtOnce() throws Exception {
        try (SimulatedCluster a = SimulatedCluster.up(SimulatedCluster.uniqueName("a"), 2);
                SimulatedCluster b = SimulatedCluster.up(SimulatedCluster.uniqueName("b"), 2)) {
            assertNotEquals(subnet(a), subnet(b), "each cluster has its own subnet");
            assertEquals(a.hostName(1), a.require("exec", "1", "hostname").strip());
            assertEquals(b.hostName(1), b.require("exec", "1", "hostname").strip());
            b.close();
            assertEquals(a.hostName(0), a.require("exec", "0", "hostname").strip(), "taking one down leaves the other");
        }
    }

    @Test
    void linksAreShapedBothWays() throws Exception {
        try (SimulatedCluster c = SimulatedCluster.up(SimulatedCluster.uniqueName("l"), 2, "--link", "100mbit")) {
            String host = c.require("exec", "1", "tc", "qdisc", "show", "dev", "eth0");
            assertTrue(host.contains("tbf") && host.contains("rate 100Mbit"), host);
            String port = command(List.of("ip", "netns", "exec", c.name() + "-sw", "tc", "qdisc", "show", "dev", "h1")).output();
            assertTrue(port.contains("tbf") && port.contains("rate 100Mbit"), port);
            // A delay needs the kernel's netem: made, or refused saying so (this VM's kernel has none).
            SimulatedCluster.Outcome delayed = c.script("up", "--hosts", "2", "--link", "100mbit,1ms");
            String shaped = delayed.exitCode() == 0 ? c.require("exec", "1", "tc", "qdisc", "show", "dev", "eth0") : "";
            assertTrue(delayed.exitCode() == 0 ? shaped.contains("netem") && shaped.contains("delay 1ms")
                    : delayed.output().contains("netem") && delayed.output().contains("use --link 100mbit without a delay"),
                    () -> delayed + "\n" + shaped);
            if (delayed.exitCode() != 0) {
                assertFalse(namespaces().contains(c.name() + "-sw"), "a refused up leaves no half-made network");
            }
        }
    }

    @Test
    void clearErrors(@TempDir(cleanup = CleanupMode.ON_SUCCESS) Path bin) throws Exception {
        String script = SimulatedCluster.script().toString();
        SimulatedCluster.Outcome user = command(List.of("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", script,
                "--name", "nobody", "up"));
        assertEquals(1, user.exitCode(), user.output());
        assertTrue(user.output().contains("needs root"), user.output());
        // No ip on PATH: only what the script needs before it looks for ip.
        for (String tool : List.of("bash", "readlink", "dirname", "id")) {
            Files.createSymbolicLink(bin.resolve(tool), Path.of(command(List.of("sh", "-c", "command -v " + tool)).output().strip()));
        }
        Process p = new ProcessBuilder("/usr/bin/env", "PATH=" + bin, script, "--name", "noip", "up").redirectErrorStream(true).start();
        String noIp = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(1, p.waitFor(), noIp);
        assertTrue(noIp.contains("no 'ip' command") && noIp.contains("iproute2"), noIp);
        for (List<String> bad : List.of(List.of("--name", "Bad_Name", "up"), List.of("--name", "x", "up", "--hosts", "5"),
                List.of("--name", "x", "up", "--link", "fast"), List.of("--name", "x", "explode"))) {
            List<String> cmd = new ArrayList<>(List.of(script));
            cmd.addAll(bad);
            SimulatedCluster.Outcome o = command(cmd);
            assertEquals(2, o.exitCode(), () -> bad + ": a usage error\n" + o.output());
        }
    }

    @Test
    void clustersOfEndedOwnersAreRemoved() throws Exception {
        Process gone = new ProcessBuilder("true").start();
        gone.waitFor();
        String orphan = SimulatedCluster.uniqueName("o");
        SimulatedCluster.Outcome made = command(List.of(SimulatedCluster.script().toString(), "--name", orphan, "up", "--hosts", "1",
                "--owner", String.valueOf(gone.pid())));
        try {
            assertEquals(0, made.exitCode(), made.output());
            try (SimulatedCluster next = SimulatedCluster.up(SimulatedCluster.uniqueName("n"), 1)) {
                assertFalse(namespaces().contains(orphan + "-h0"), "the next up removed the cluster whose owner had ended");
                assertTrue(namespaces().contains(next.hostName(0)));
            }
        } finally {
            command(List.of(SimulatedCluster.script().toString(), "--name", orphan, "down"));
        }
    }
}
