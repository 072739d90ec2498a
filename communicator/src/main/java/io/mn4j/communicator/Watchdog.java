package io.mn4j.communicator;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import mpi.MPI;
import mpi.MPIException;

/**
 * A daemon thread per process that ends the job when a communicator call has waited longer than
 * the timeout: MPI over TCP waits for ever on a peer that is stopped or cut off, and a blocking MPI
 * call cannot be interrupted. Before ending the job it asks every rank what it is doing
 * ({@link RollCall}), and reports the call and the ranks that did not answer or have not arrived
 * ({@link TimeoutReport}). Only time inside a call counts ({@link MpiCalls}), never the program's
 * own work between calls.
 */
final class Watchdog {
    /** As torch.distributed's default: long enough for one rank's minutes of work while others wait. */
    static final Duration DEFAULT = Duration.ofMinutes(30);
    private static final Pattern SETTING = Pattern.compile("\\s*(\\d+(?:\\.\\d*)?)\\s*([smh]?)\\s*");
    /** Nanoseconds; 0: no timeout; -1: not read from the settings yet. */
    private static volatile long timeoutNanos = -1;
    private static RollCall rollCall;
    private static Thread thread;

    private Watchdog() {
    }

    static void setTimeout(Duration timeout) {
        if (timeout.isNegative()) {
            throw new IllegalArgumentException("setTimeout: the timeout must not be negative, got " + timeout);
        }
        timeoutNanos = timeout.toNanos();
    }

    static Duration timeout() {
        return Duration.ofNanos(timeoutNanos());
    }

    private static long timeoutNanos() {
        long t = timeoutNanos;
        if (t < 0) {
            t = fromSettings(System.getProperty("mn4j.timeout"), System.getenv("MN4J_TIMEOUT"));
            timeoutNanos = t;
        }
        return t;
    }

    /**
     * The timeout {@code -Dmn4j.timeout}, else {@code MN4J_TIMEOUT}, else {@link #DEFAULT}, sets:
     * seconds, or a number with s, m or h; 0 turns it off.
     */
    static long fromSettings(String property, String environment) {
        String value = property != null ? property : environment;
        if (value == null) {
            return DEFAULT.toNanos();
        }
        Matcher m = SETTING.matcher(value);
        if (!m.matches()) {
            throw new IllegalArgumentException((property != null ? "-Dmn4j.timeout" : "MN4J_TIMEOUT") + "=" + value
                    + ": not a timeout; give seconds, or a number with s, m or h (90, 2.5s, 30m, 1h); 0 turns it off");
        }
        long unit = switch (m.group(2)) {
            case "m" -> 60;
            case "h" -> 3600;
            default -> 1;
        };
        return (long) (Double.parseDouble(m.group(1)) * unit * 1e9);
    }

    /**
     * Reads the timeout's settings (a bad one throws here, on every rank) and starts the thread;
     * with MPI at THREAD_MULTIPLE it answers other ranks' roll calls and asks its own on a duplicate
     * of MPI_COMM_WORLD (collective: every rank starts it).
     */
    static synchronized void start(boolean threadMultiple) throws MPIException {
        timeoutNanos();
        if (thread != null) {
            return;
        }
        rollCall = threadMultiple ? new RollCall(MPI.COMM_WORLD.dup()) : null;
        thread = new Thread(Watchdog::run, "mn4j-watchdog");
        thread.setDaemon(true);
        thread.start();
    }

    /** Stops answering roll calls: MPI is about to be finalized (called under MpiJob's lock). */
    static synchronized void stop() {
        if (rollCall != null) {
            try {
                rollCall.close();
            } catch (MPIException e) {
                // finalization frees what is left
            }
            rollCall = null;
        }
    }

    /** Between checks: a tenth of the timeout, from 50 ms to 1 s. */
    private static long tickNanos() {
        long t = timeoutNanos();
        return t == 0 ? TimeUnit.SECONDS.toNanos(1) : Math.max(TimeUnit.MILLISECONDS.toNanos(50), Math.min(t / 10, TimeUnit.SECONDS.toNanos(1)));
    }

    private static void run() {
        while (true) {
            sleep(tickNanos());
            if (!MpiJob.unlessFinished(Watchdog::answer)) {
                return;
            }
            long t = timeoutNanos();
            long now = System.nanoTime();
            for (OpenCall.Snapshot s : MpiCalls.open()) {
                if (t > 0 && now - s.since() > t) {
                    expire(s, t);
                    return;
                }
            }
        }
    }

    /** Answers the roll calls of other ranks, if any came. */
    private static synchronized void answer() {
        if (rollCall == null) {
            return;
        }
        try {
            rollCall.answer(() -> TimeoutReport.state(MpiCalls.open(), System.nanoTime()));
        } catch (MPIException e) {
            rollCall = null; // the side channel is broken: no answers, and timeouts report without asking
        }
    }

    /** Asks the other ranks, reports {@code stuck} and ends the job. */
    private static void expire(OpenCall.Snapshot stuck, long timeout) {
        long grace = TimeUnit.SECONDS.toNanos(2) + 2 * tickNanos();
        String[] answers = askAround(grace);
        CommunicationException e = new CommunicationException(TimeoutReport.of(stuck, MpiJob.worldRank(), answers, timeout,
                grace / 1e9, System.nanoTime()));
        // Where the program waits, rather than where the watchdog noticed.
        e.setStackTrace(stuck.thread().getStackTrace());
        MpiJob.fail(e);
    }

    /** Every rank's answer within {@code graceNanos} (null: none), or null when there is no roll call. */
    private static String[] askAround(long graceNanos) {
        String[] answers = new String[MpiJob.worldSize()];
        boolean[] asked = {false};
        boolean[] all = {false};
        MpiJob.unlessFinished(() -> asked[0] = call(r -> r.ask()));
        if (!asked[0]) {
            return null;
        }
        long deadline = System.nanoTime() + graceNanos;
        while (!all[0] && System.nanoTime() - deadline < 0) {
            sleep(TimeUnit.MILLISECONDS.toNanos(20));
            MpiJob.unlessFinished(() -> {
                answer(); // the others time out too, and ask this rank
                call(r -> all[0] = r.collect(answers));
            });
        }
        return answers;
    }

    /** Runs {@code step} on the roll call; false if there is none or it failed. */
    private static synchronized boolean call(RollCallStep step) {
        if (rollCall == null) {
            return false;
        }
        try {
            step.run(rollCall);
            return true;
        } catch (MPIException e) {
            rollCall = null;
            return false;
        }
    }

    @FunctionalInterface
    private interface RollCallStep {
        void run(RollCall r) throws MPIException;
    }

    private static void sleep(long nanos) {
        try {
            TimeUnit.NANOSECONDS.sleep(nanos);
        } catch (InterruptedException e) {
            // mn4j's own thread, which nothing interrupts: the next check comes a little early
        }
    }
}
