package io.mn4j.mpitests.functions;

import static io.mn4j.mpitests.functions.DeterministicFixtures.F64;
import static io.mn4j.mpitests.functions.DeterministicFixtures.det;
import static io.mn4j.mpitests.functions.DeterministicFixtures.grad;
import static io.mn4j.mpitests.functions.FunctionsSuite.partner;
import static io.mn4j.mpitests.functions.FunctionsSuite.settled;

import io.mn4j.communicator.Communicator;
import io.mn4j.functions.Functions;
import io.mn4j.mpitests.Check;
import io.mn4j.mpitests.Scenario;
import io.mn4j.mpitests.ScenarioSuite;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * The wrap of point-to-point gradient tags, in a launch whose {@code -Dmn4j.functions.occurrenceBits}
 * shortens the tags' range (16384 by default) so that passing it takes hundreds of messages, not
 * tens of thousands.
 */
public class GradientTagsSuite implements ScenarioSuite {
    /** Messages of one (peer, tag) pair before their gradient tags repeat, as this launch set it. */
    static final int RANGE = 1 << Integer.getInteger("mn4j.functions.occurrenceBits", 14);
    /** More passes with backward than the range, and as many more freed without it. */
    private static final int PASSES = 2 * (RANGE + RANGE / 16);

    @Override
    public Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = new LinkedHashMap<>();
        s.put("gradient tags that would repeat refused", GradientTagsSuite::gradientTagsRepeat);
        s.put("gradient tags given back by backward and by freed graphs", GradientTagsSuite::gradientTagsGivenBack);
        return s;
    }

    /**
     * Gradient tags repeat every N messages of a (peer, tag) pair (N from MPI_TAG_UB): the message
     * that would share one with an earlier message still awaiting its backward is refused on both
     * ranks, before it travels. Once the earlier graphs are freed, the pair goes on, in step.
     */
    private static void gradientTagsRepeat(Communicator c, Check check) {
        int peer = partner(c);
        int me = c.rank();
        if (peer >= 0) {
            boolean sender = me % 2 == 0;
            String refused = null;
            int accepted = 0;
            try (PointerScope scope = new PointerScope()) {
                Tensor x = det(8700, 2).requires_grad_(true);
                for (; accepted < 1 << 17 && refused == null; accepted++) {
                    try {
                        if (sender) {
                            Functions.send(x, c, peer, 24);
                        } else {
                            Functions.recv(c, peer, 24);
                        }
                    } catch (IllegalStateException e) {
                        refused = e.getMessage();
                        accepted--;
                    }
                }
            } // frees every graph: the tags are free again
            String op = sender ? "send(rank " + me + " -> " + peer + ", tag 24)" : "recv(rank " + me + " <- " + peer + ", tag 24)";
            check.isTrue("refused after the tags' range of " + RANGE + " messages", refused != null && accepted == RANGE,
                    "accepted " + accepted + " messages, then " + refused);
            String expected = op + ": message " + accepted + " of this pair";
            check.isTrue("the refusal names the message and the limit", refused != null && refused.contains(expected)
                    && refused.contains("repeat every " + accepted + " messages") && refused.contains("more tags"),
                    "got: " + refused);
            if (sender) {
                Tensor x = det(8701, 3).requires_grad_(true);
                Functions.send(x, c, peer, 24).backward();
                check.tensorsClose("gradient after the graphs were freed", torch.full(new long[] {3}, new Scalar(2.0),
                        F64), grad(x), 0);
            } else {
                Tensor z = Functions.recv(c, peer, 24);
                check.tensorsClose("message after the graphs were freed", det(8701, 3), z, 0);
                z.mul(new Scalar(2.0)).sum().backward();
            }
        }
        settled(c, check);
    }

    /**
     * A training loop holds no gradient tag beyond its iteration: on one tag, more passes with
     * backward than the tags' range, and as many more freed without it (an
     * evaluation with grad mode on), alternating, through send/recv and sendAll/recvAll, are
     * never refused.
     */
    private static void gradientTagsGivenBack(Communicator c, Check check) {
        int peer = partner(c);
        int me = c.rank();
        if (peer >= 0) {
            String firstProblem = null;
            Tensor x = det(8800, 2).requires_grad_(true);
            for (int i = 0; i < PASSES && firstProblem == null; i++) {
                try (PointerScope scope = new PointerScope()) {
                    boolean withBackward = i % 2 == 0;
                    boolean list = i % 4 >= 2; // sendAll/recvAll hold the pair's tags too
                    if (me % 2 == 0) {
                        Tensor delegate = list ? Functions.sendAll(List.of(x), c, peer, 25)
                                : Functions.send(x, c, peer, 25);
                        if (withBackward) {
                            delegate.backward();
                        }
                    } else {
                        Tensor z = list ? Functions.recvAll(c, peer, 25, null).get(0) : Functions.recv(c, peer, 25);
                        if (withBackward) {
                            z.sum().backward();
                        }
                    }
                } catch (RuntimeException e) {
                    firstProblem = "pass " + i + ": " + e.getMessage();
                }
            }
            check.isTrue(PASSES + " passes on one tag", firstProblem == null, firstProblem);
            if (me % 2 == 0) {
                check.tensorsClose("gradients of the passes with backward", torch.full(new long[] {2},
                        new Scalar(PASSES / 2.0), F64), grad(x), 0);
            }
        }
        settled(c, check);
    }
}
