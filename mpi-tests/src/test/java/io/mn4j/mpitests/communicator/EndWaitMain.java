package io.mn4j.mpitests.communicator;

import io.mn4j.communicator.Communicator;
import java.nio.file.Files;
import java.nio.file.Path;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * A job whose main thread is done while a thread it started still waits in a receive, on 2 ranks:
 * {@code EndWaitMain <dir> <ending> <answered>}. Rank 0 starts a thread that receives from rank 1
 * and ends at once, by returning from {@link Communicator#run}'s body ({@code ending} = run) or by
 * {@link Communicator#shutdown} ({@code ending} = shutdown). With {@code answered} = yes, rank 1
 * sends after 1.5 s, and the receiving thread writes {@link #RECEIVED} to {@code rank-0.received}
 * if it got what was sent; with no, rank 1 never sends (rank 0 waits only 3 s for it then).
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
        boolean answered = args[2].equals("yes");
        System.setProperty("mn4j.endWaitSeconds", answered ? "30" : "3");
        if (byRun) {
            Communicator.run(c -> body(c, dir, answered));
        } else {
            body(Communicator.world(), dir, answered);
            Communicator.shutdown();
        }
    }

    private static void body(Communicator c, Path dir, boolean answered) throws Exception {
        c.barrier();
        if (c.rank() == 0) {
            Thread receiver = new Thread(() -> {
                try (PointerScope scope = new PointerScope()) {
                    Tensor got = c.recv(1, 5);
                    boolean same = got.equal(Data.small(ScalarType.Float, SHAPE, SEED));
                    Files.writeString(dir.resolve("rank-0.received"), same ? RECEIVED : "something else: " + got);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }, "end-wait-receiver");
            receiver.start();
            Thread.sleep(300); // into its receive before this thread ends the job
            Files.writeString(dir.resolve("rank-0.ending"), Long.toString(System.currentTimeMillis()));
        } else if (answered) {
            Thread.sleep(1500);
            try (PointerScope scope = new PointerScope()) {
                c.send(Data.small(ScalarType.Float, SHAPE, SEED), 0, 5);
            }
        }
    }
}
