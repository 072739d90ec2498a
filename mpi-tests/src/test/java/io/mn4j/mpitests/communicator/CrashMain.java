package io.mn4j.mpitests.communicator;

import io.mn4j.communicator.Agreement;
import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.JobInputException;
import io.mn4j.communicator.ReduceOp;
import java.nio.file.Files;
import java.nio.file.Path;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * A job in which the last rank fails while the others wait for it: {@code CrashMain <dir> <mode>}.
 * Modes: {@code collective} (the failing rank's main thread throws; the others are in an
 * allreduce), {@code recv} (a worker thread of the failing rank throws while its main thread and
 * every other rank wait in a blocking recv), {@code run} (the body given to Communicator.run throws
 * while the others wait in a recv from it), {@code killed} (the failing rank's process is killed
 * with SIGKILL, as the kernel's out-of-memory killer does: no exception, no message of its own,
 * while the others wait in a recv from it), {@code agreed} (every rank's input disagrees and
 * {@link Agreement} says so on every rank: the job ends normally, each rank reports the message
 * and exits with 2), {@code agreed-in-half} (the same on a communicator of the first half of the
 * ranks only: those ranks throw while the rest wait, so the job must end as after a crash). Each
 * rank writes a marker file once it is waiting, so
 * the test knows the others really were blocked, and the failing rank writes the time it throws,
 * so the test can tell how long the job took to end after the failure.
 */
public final class CrashMain {
    /** The text the failing rank's exception carries; the test looks for it in the job's output. */
    static final String MESSAGE = "deliberate failure for the crash test";

    private CrashMain() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        String mode = args[1];
        if (mode.equals("run")) {
            Communicator.run(c -> body(c, dir, mode));
            return;
        }
        if (mode.startsWith("agreed")) {
            agreed(dir, mode);
            return;
        }
        body(Communicator.world(), dir, mode);
        Communicator.shutdown();
    }

    private static void body(Communicator c, Path dir, String mode) throws Exception {
        int me = c.rank();
        int failing = c.size() - 1;
        c.barrier();
        if (me == failing) {
            marker(dir, me);
            // Give the others time to enter their blocking call first.
            Thread.sleep(1500);
            String text = MESSAGE + " on rank " + me + " (" + mode + ")";
            Files.writeString(dir.resolve("throwing-at-millis"), Long.toString(System.currentTimeMillis()));
            if (mode.equals("killed")) {
                new ProcessBuilder("kill", "-9", Long.toString(ProcessHandle.current().pid())).start().waitFor();
            } else if (mode.equals("recv")) {
                Thread worker = new Thread(() -> {
                    throw new IllegalStateException(text);
                }, "crash-worker");
                worker.start();
                c.recv(0, 5); // never sent: only the failure can end this wait
            } else {
                throw new IllegalStateException(text);
            }
        } else {
            marker(dir, me);
            Tensor x = Data.small(ScalarType.Float, new long[] {4}, me);
            if (mode.equals("collective")) {
                c.allreduce(x, ReduceOp.SUM);
            } else {
                c.recv(failing, 5);
            }
        }
        Files.writeString(dir.resolve("rank-" + me + ".finished"), "finished");
    }

    private static void agreed(Path dir, String mode) throws Exception {
        int[] rank = {-1};
        try {
            Communicator.run(c -> {
                rank[0] = c.rank();
                marker(dir, c.rank());
                if (mode.equals("agreed")) {
                    Files.writeString(dir.resolve("throwing-at-millis"), Long.toString(System.currentTimeMillis()));
                    Agreement.requireSame(c, "rank parity", c.rank() % 2);
                    return;
                }
                int half = c.size() / 2;
                try (Communicator firstHalf = c.split(c.rank() < half ? 0 : 1, c.rank())) {
                    if (c.rank() < half) {
                        Files.writeString(dir.resolve("throwing-at-millis"), Long.toString(System.currentTimeMillis()));
                        Agreement.requireSame(firstHalf, "rank", c.rank());
                    }
                    c.recv(0, 5); // never sent: only the failure can end this wait
                }
            });
        } catch (JobInputException e) {
            Files.writeString(dir.resolve("rank-" + rank[0] + ".reported"), e.getMessage());
            System.exit(2);
        }
    }

    private static void marker(Path dir, int rank) throws Exception {
        Files.writeString(dir.resolve("rank-" + rank + ".waiting"), "waiting");
    }
}
