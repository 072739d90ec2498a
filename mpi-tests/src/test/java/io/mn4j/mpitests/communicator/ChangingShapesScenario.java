package io.mn4j.mpitests.communicator;

import io.mn4j.communicator.Communicator;
import io.mn4j.mpitests.Check;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * A long run of alltoall and allgather calls in which each pair of ranks keeps a shape for a few
 * calls and then changes it, at different calls for different pairs. The changes keep the byte
 * count (a transposed shape, another dtype of the same width, a 4-d shape that needs a header)
 * so that a shape taken from the wrong call would pass for the right one by its size; scatters
 * and gathers between the calls, and a late rank now and then, let the other ranks run ahead
 * into the next call, so that messages of two calls are in flight at once.
 */
final class ChangingShapesScenario {
    private record Shape(ScalarType dtype, long... dims) {
    }

    private static final List<Shape> SHAPES = List.of(
            new Shape(ScalarType.Float, 24),
            new Shape(ScalarType.Float, 4, 6),
            new Shape(ScalarType.Float, 6, 4),
            new Shape(ScalarType.Float, 2, 3, 4),
            new Shape(ScalarType.Int, 24),
            new Shape(ScalarType.Float, 1, 2, 3, 4), // sent with a header
            new Shape(ScalarType.Float, 300, 256), // in the Communicator's own receive buffers
            new Shape(ScalarType.Float, 0, 5), // zero-size, sent with a header
            new Shape(ScalarType.Float, 0), // zero-size, in a tag
            new Shape(ScalarType.Long)); // 0-d

    private static final int CALLS = 60;

    private ChangingShapesScenario() {
    }

    /** What {@code sender} sends to {@code receiver} in call {@code i}: runs of 2 to 5 repeats. */
    private static Tensor part(int i, int sender, int receiver) {
        int run = 2 + (sender + 2 * receiver) % 4;
        Shape s = SHAPES.get((i / run + sender + receiver) % SHAPES.size());
        return Data.wide(s.dtype(), s.dims(), 1000L * i + 10L * sender + receiver);
    }

    static void run(Communicator c, Check check) throws InterruptedException {
        int me = c.rank();
        int n = c.size();
        for (int call = 0; call < CALLS; call++) {
            int i = call;
            try (PointerScope scope = new PointerScope()) {
                if (i % 6 == 4 && me == (i / 6) % n) {
                    Thread.sleep(20); // the others post their receives and wait for this rank
                }
                if (i % 5 == 3) {
                    List<Tensor> got = c.allgather(part(i, me, me));
                    for (int r = 0; r < n; r++) {
                        check.tensorsClose("call " + i + ": allgather from rank " + r, part(i, r, r), got.get(r), 0);
                    }
                } else {
                    List<Tensor> mine = new ArrayList<>();
                    for (int d = 0; d < n; d++) {
                        mine.add(part(i, me, d));
                    }
                    List<Tensor> got = c.alltoall(mine);
                    for (int r = 0; r < n; r++) {
                        check.tensorsClose("call " + i + ": alltoall from rank " + r, part(i, r, me), got.get(r), 0);
                    }
                }
                if (i % 7 == 2) {
                    int root = i % n;
                    List<Tensor> parts = me == root ? Data.perRank(n, r -> part(i, root, r)) : null;
                    check.tensorsClose("call " + i + ": scatter from rank " + root, part(i, root, me),
                            c.scatter(parts, root), 0);
                }
                if (i % 7 == 5) {
                    int root = (i + 1) % n;
                    List<Tensor> got = c.gather(part(i, me, root), root);
                    for (int r = 0; me == root && r < n; r++) {
                        check.tensorsClose("call " + i + ": gather at rank " + root + " from rank " + r,
                                part(i, r, root), got.get(r), 0);
                    }
                }
            }
        }
    }
}
