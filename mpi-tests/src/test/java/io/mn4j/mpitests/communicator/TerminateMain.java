package io.mn4j.mpitests.communicator;

import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.ReduceOp;
import io.mn4j.communicator.SendHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * A job that communicates until it is stopped from outside ({@code TerminateMain <dir>}): every
 * rank writes a marker once it is in its loop of blocking messages and allreduces, so the test can
 * signal the job while ranks are inside MPI.
 */
public final class TerminateMain {
    private TerminateMain() {
    }

    public static void main(String[] args) {
        Path dir = Path.of(args[0]);
        Communicator.run(c -> {
            Files.writeString(dir.resolve("rank-" + c.rank() + ".waiting"), "waiting");
            int next = (c.rank() + 1) % c.size();
            int previous = (c.rank() + c.size() - 1) % c.size();
            Tensor token = Data.small(ScalarType.Float, new long[] {1 << 16}, c.rank());
            // A token goes round the ring; rank 0 holds it a while each round, so that the others
            // spend their time blocked inside MPI, where the signal finds them.
            while (true) {
                try (PointerScope scope = new PointerScope()) {
                    if (c.rank() == 0) {
                        Thread.sleep(20);
                    } else {
                        c.recv(previous, 3);
                    }
                    SendHandle sent = c.isend(token, next, 3);
                    if (c.rank() == 0) {
                        c.recv(previous, 3);
                    }
                    sent.waitFor();
                    c.allreduce(token, ReduceOp.MAX);
                }
            }
        });
    }
}
