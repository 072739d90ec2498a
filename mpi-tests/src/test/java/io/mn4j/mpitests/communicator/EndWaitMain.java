package io.mn4j.mpitests.communicator;

import io.mn4j.communicator.Communicator;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * A job whose main thread is done while a thread it started still waits in a receive, on 2 or more
 * ranks (ranks above 1 only end their bodies):
 * {@code EndWaitMain <dir> <ending> <answer>}. Rank 0 starts a thread that receives from rank 1
 * and, once that thread is inside the receive, ends the job, by returning from
 * {@link Communicator#run}'s body ({@code ending} = run) or by {@link Communicator#shutdown}
 * ({@code ending} = shutdown). With {@code answer} = yes, rank 1 sends after 1.5 s, and the
 * receiving thread writes {@link #RECEIVED} to {@code rank-0.received} if it got what was sent;
 * with late, it then waits half a second and starts a second receive, after the job has ended;
 * with no, rank 1 never sends (rank 0 waits only 3 s for it then). With {@code answer} = close,
 * there is no receive: every rank splits off a communicator and a thread of its own closes it
 * half a second after the job has ended, then writes {@code rank-R.closed}.
 */
public final class EndWaitMain {
    static final long[] SHAPE = {1 << 14};
    static final long SEED = 7;
    static final String RECEIVED = "received what rank 1 sent";

    private EndWaitMain() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        boolean byRun = args[1].equals("run");
        String answer = args[2];
        boolean answered = !answer.equals("no");
        System.setProperty("mn4j.endWaitSeconds", answered ? "30" : "3");
        if (byRun) {
            Communicator.run(c -> body(c, dir, answer));
        } else {
            body(Communicator.world(), dir, answer);
            Communicator.shutdown();
        }
    }

    private static void body(Communicator c, Path dir, String answer) throws Exception {
        c.barrier();
        if (answer.equals("close")) {
            Communicator sub = c.split(0, c.rank());
            new Thread(() -> {
                try {
                    Thread.sleep(500);
                    sub.close();
                    Files.writeString(dir.resolve("rank-" + c.rank() + ".closed"), "closed");
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }, "end-wait-closer").start();
            return;
        }
        if (c.rank() == 0) {
            Thread receiver = new Thread(() -> {
                try (PointerScope scope = new PointerScope()) {
                    Tensor got = c.recv(1, 5);
                    boolean same = got.equal(Data.small(ScalarType.Float, SHAPE, SEED));
                    Files.writeString(dir.resolve("rank-0.received"), same ? RECEIVED : "something else: " + got);
                    if (answer.equals("late")) {
                        Thread.sleep(500);
                        c.recv(1, 6); // the job has ended: refused
                    }
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }, "end-wait-receiver");
            receiver.start();
            awaitCallsInMpi(1);
            Files.writeString(dir.resolve("rank-0.ending"), Long.toString(System.currentTimeMillis()));
        } else if (c.rank() == 1 && !answer.equals("no")) {
            Thread.sleep(1500);
            try (PointerScope scope = new PointerScope()) {
                c.send(Data.small(ScalarType.Float, SHAPE, SEED), 0, 5);
            }
        }
    }

    /**
     * Waits until {@code n} communicator calls are in progress on this rank (the receiving thread
     * is inside its receive), reading mn4j's own count of them: a sleep could end before a slow
     * thread got there.
     */
    private static void awaitCallsInMpi(int n) throws Exception {
        Field f = Class.forName("io.mn4j.communicator.MpiCalls").getDeclaredField("inProgress");
        f.setAccessible(true);
        AtomicInteger calls = (AtomicInteger) f.get(null);
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (calls.get() < n) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("the receiving thread never got into its receive");
            }
            Thread.sleep(1);
        }
        Thread.sleep(100); // and on into MPI
    }
}
