package io.mn4j.mpitests.communicator;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.ReduceOp;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * A job with a communicator timeout of {@code TimeoutMain <dir> <mode> <seconds>}
 * ({@link Communicator#setTimeout}) in which a rank keeps another waiting. Modes: {@code recv} and
 * {@code irecv} (rank 1 receives with tag 7 from rank 0, blocking or with {@code waitFor}, and
 * rank 0 never sends: it computes for ever), {@code allreduce} (every rank but the last enters an
 * allreduce that the last never joins), {@code slow} (rank 0 computes for {@link #SLOW_MILLIS}
 * before it sends to rank 1, then rank 1 as long before an allreduce: both waits well inside the
 * timeout; each rank writes {@code rank-R.ok} if the values it got are right). A waiting rank
 * writes when it starts waiting to {@code waiting-at-millis}.
 */
public final class TimeoutMain {
    static final int TAG = 7;
    /** A slow peer's pause: well under the timeout the test gives. */
    static final long SLOW_MILLIS = 2500;

    private TimeoutMain() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        String mode = args[1];
        Communicator.setTimeout(Duration.ofMillis((long) (Double.parseDouble(args[2]) * 1000)));
        Communicator.run(c -> {
            c.barrier();
            int me = c.rank();
            int last = c.size() - 1;
            switch (mode) {
                case "recv", "irecv" -> {
                    if (me == 1) {
                        waiting(dir);
                        Tensor t = mode.equals("recv") ? c.recv(0, TAG) : c.irecv(0, TAG).waitFor();
                        throw new IllegalStateException("received " + t + " that nobody sent");
                    } else if (me == 0) {
                        computeForEver();
                    }
                }
                case "allreduce" -> {
                    if (me == last) {
                        computeForEver();
                    }
                    waiting(dir);
                    c.allreduce(torch.ones(3), ReduceOp.SUM);
                    throw new IllegalStateException("an allreduce without rank " + last + " returned");
                }
                case "slow" -> slow(c, dir);
                default -> throw new IllegalArgumentException("mode " + mode);
            }
        });
    }

    /** Rank 0 sends 1..4 late, then rank 1 joins an allreduce late; every rank checks what it got. */
    private static void slow(Communicator c, Path dir) throws Exception {
        int me = c.rank();
        boolean right = true;
        if (me == 0) {
            Thread.sleep(SLOW_MILLIS);
            c.send(torch.arange(new Scalar(1), new Scalar(5)), 1, TAG);
        } else if (me == 1) {
            right = c.recv(0, TAG).sum().item_long() == 10;
            Thread.sleep(SLOW_MILLIS);
        }
        Tensor sum = c.allreduce(torch.full(new long[] {2}, new Scalar(me + 1)), ReduceOp.SUM);
        long expected = (long) c.size() * (c.size() + 1) / 2;
        right &= sum.eq(new Scalar(expected)).all().item_bool();
        if (right) {
            Files.writeString(dir.resolve("rank-" + me + ".ok"), "ok");
        }
    }

    private static void waiting(Path dir) throws Exception {
        Files.writeString(dir.resolve("waiting-at-millis"), String.valueOf(System.currentTimeMillis()));
    }

    /** The program's own work, outside any communicator call: the timeout must not count it. */
    private static void computeForEver() throws InterruptedException {
        Thread.sleep(Long.MAX_VALUE);
    }
}
