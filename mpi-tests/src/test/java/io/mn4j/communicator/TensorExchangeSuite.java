package io.mn4j.communicator;

import io.mn4j.mpitests.Check;
import io.mn4j.mpitests.Scenario;
import io.mn4j.mpitests.ScenarioSuite;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * {@link TensorExchange} when rank 0 receives a message it cannot take, as after mismatched calls
 * of collectives (injected here by the last rank, by hand, on the exchange's own communicators):
 * rank 0 throws naming it, but only once the other ranks' messages of the exchange are in (it
 * takes the last rank's first), the bad message included, so that every sender completes; the
 * next exchange on the same communicators finds nothing left over. In this package to reach the
 * package-private {@link TensorExchange}.
 */
public class TensorExchangeSuite implements ScenarioSuite {
    /** float32 elements of a megabyte: above the eager limit, so a sender waits for its receiver. */
    private static final int MIB_FLOATS = 1 << 18;

    /** What the last rank sends to rank 0 instead of its part of a gather. */
    @FunctionalInterface
    interface Injection {
        void send(Intracomm payloads) throws MPIException;
    }

    /**
     * A gather at rank 0 of a megabyte per rank on a new exchange, the last rank injecting a message
     * of its own instead: rank 0 must throw with {@code fragments}, the others return; then an
     * allgather and a world collective prove every rank in step with nothing left over.
     */
    static void gatherWithInjected(Intracomm world, Check check, String what, Injection injection,
            String... fragments) throws MPIException {
        Intracomm headers = world.dup();
        Intracomm payloads = world.dup();
        try {
            TensorExchange exchange = new TensorExchange(
                    new Wire(headers, payloads, Communicator.DEFAULT_CHUNK_BYTES, Members.of(headers, "exchange-suite")));
            int me = payloads.getRank();
            int n = payloads.getSize();
            int last = n - 1;
            boolean[] toRoot = only(n, 0);
            Tensor mine = part(me, 1);
            if (me == last) {
                injection.send(payloads);
            } else if (me == 0) {
                check.throwsWith(what + ": rank 0 throws", () -> {
                    try {
                        exchange.run(Outgoing.sameTo(mine, toRoot), toRoot, all(n), "gather");
                    } catch (MPIException e) {
                        throw new CommunicationException("MPI error: " + e.getMessage(), e);
                    }
                }, fragments);
            } else {
                TensorExchange.Exchanged got = exchange.run(Outgoing.sameTo(mine, toRoot), toRoot, only(n, -1), "gather");
                check.equal(what + ": a sender returns", 0, got.invalid().size());
            }
            // Every message of the failed gather was received: this allgather gets the new values.
            TensorExchange.Exchanged got = exchange.run(Outgoing.sameTo(part(me, 2), all(n)), all(n), all(n), "allgather");
            for (int r = 0; r < n; r++) {
                Tensor expected = part(r, 2);
                Tensor actual = got.tensors()[r];
                check.isTrue(what + ": the next exchange gets rank " + r + "'s new part",
                        actual != null && actual.equal(expected), "got " + (actual == null ? "nothing" : "other values"));
            }
            long[] ones = {1};
            world.allReduce(ones, 1, MPI.LONG, MPI.SUM);
            check.equal(what + ": ranks in step afterwards", (long) n, ones[0]);
        } finally {
            headers.free();
            payloads.free();
        }
    }

    /** Rank r's megabyte for call {@code call}: values that tell ranks and calls apart. */
    static Tensor part(int r, int call) {
        return torch.arange(new Scalar(MIB_FLOATS)).to(ScalarType.Float).add(new Scalar(1000.0 * r + 0.5 * call));
    }

    static boolean[] only(int n, int r) {
        boolean[] one = new boolean[n];
        if (r >= 0) {
            one[r] = true;
        }
        return one;
    }

    static boolean[] all(int n) {
        boolean[] every = new boolean[n];
        Arrays.fill(every, true);
        return every;
    }

    static ByteBuffer direct(int bytes) {
        return ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
    }

    @Override
    public Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = new LinkedHashMap<>();
        s.put("a megabyte message whose tag is no tensor's", (c, check) -> {
            if (c.size() == 1) {
                return; // needs a second rank
            }
            int last = c.size() - 1;
            gatherWithInjected(MPI.COMM_WORLD, check, "bad tag", p -> p.send(direct(4 << 20), 4 << 20, MPI.BYTE, 0,
                    ShapeTag.PAYLOAD), "gather from rank " + last, "not an mn4j tensor", "tag " + ShapeTag.PAYLOAD);
        });
        s.put("a header message of the wrong size", (c, check) -> {
            if (c.size() == 1) {
                return;
            }
            int last = c.size() - 1;
            gatherWithInjected(MPI.COMM_WORLD, check, "short header", p -> p.send(direct(40), 40, MPI.BYTE, 0,
                    ShapeTag.HEADER), "gather from rank " + last, "header message of 40 bytes");
        });
        s.put("a header message that is no header", (c, check) -> {
            if (c.size() == 1) {
                return;
            }
            int last = c.size() - 1;
            gatherWithInjected(MPI.COMM_WORLD, check, "no header", p -> p.send(direct(TensorHeader.BYTES),
                    TensorHeader.BYTES, MPI.BYTE, 0, ShapeTag.HEADER), "gather from rank " + last, "not an mn4j tensor header");
        });
        s.put("a payload shorter than its header announced", (c, check) -> {
            if (c.size() == 1) {
                return;
            }
            int last = c.size() - 1;
            long[] shape = {2, 3, 4, MIB_FLOATS / 24}; // four dimensions: a header message, then the payload
            TensorHeader announced = new TensorHeader(WireType.of(ScalarType.Float), shape);
            int half = (int) announced.nbytes / 2;
            gatherWithInjected(MPI.COMM_WORLD, check, "short payload", p -> {
                ByteBuffer header = direct(TensorHeader.BYTES);
                announced.write(header.asLongBuffer(), 0, Communicator.DEFAULT_CHUNK_BYTES);
                p.send(header, TensorHeader.BYTES, MPI.BYTE, 0, ShapeTag.HEADER);
                p.send(direct(half), half, MPI.BYTE, 0, ShapeTag.PAYLOAD);
            }, "gather", "the payload from rank " + last + " has " + half + " bytes where its header announced "
                    + announced.nbytes);
        });
        return s;
    }
}
