package io.mn4j.communicator;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.LongBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;
import mpi.Message;
import mpi.Request;
import mpi.Status;
import org.bytedeco.pytorch.Tensor;

/**
 * The collectives' exchange of whole tensors (gather, allgather, alltoall, scatter), on a
 * {@link Wire}'s payload communicator and in its header format, with no header round of its own.
 */
final class TensorExchange {
    private final Wire wire;
    private final Intracomm comm;
    private final int rank;
    private final int size;
    private final ShapeTag shapeTags;

    TensorExchange(Wire wire) throws MPIException {
        this.wire = wire;
        this.comm = wire.payloadComm();
        this.rank = comm.getRank();
        this.size = comm.getSize();
        this.shapeTags = new ShapeTag(ShapeTag.usableBits());
    }

    /**
     * What {@link #run} received: a tensor from every rank it expected one from (null from a
     * rank with invalid input), and the invalid code of each rank with invalid input, this one
     * included ({@link Outgoing#describe}).
     */
    record Exchanged(Tensor[] tensors, SortedMap<Integer, Long> invalid) {
    }

    /**
     * One exchange among the ranks, with no header round: this rank sends {@code sends[r]} to
     * every rank r with {@code to[r]} and receives a tensor from every rank r with {@code from[r]},
     * its own part copied. A tensor whose dtype and shape fit in a tag ({@link ShapeTag}) is one
     * message of its own bytes, which the receiver probes and receives straight into a tensor
     * allocated from the tag; any other goes as a header message and then its payload. Invalid
     * {@code sends} are announced to the ranks in {@code to} by a header message with their code.
     *
     * <p>All messages go on the payload communicator, so that a rank's messages reach each peer in
     * the order sent, and collectives are called in the same order on every rank: a probe for any
     * tag from a peer finds that peer's message of this exchange. A message this rank cannot take
     * (from mismatched calls) or a payload shorter than announced is an exception, but only once
     * every message of this exchange is in and every request has completed (MPI writes into the
     * received tensors and reads the pooled header buffers until then); the first error is thrown,
     * later ones attached as suppressed.
     */
    Exchanged run(Outgoing sends, boolean[] to, boolean[] from, String op) throws MPIException {
        ExchangeInFlight round = new ExchangeInFlight(size);
        // MPI copies the own part first in its all-to-all too: done later, the copy would hold up
        // the peers' transfers, which advance only while this rank is inside MPI.
        if (!sends.valid()) {
            round.invalid.put(rank, sends.invalidCode());
        } else if (from[rank]) {
            TensorHeader h = sends.headers()[rank];
            round.got[rank] = h.allocate();
            TensorBytes.copy(sends.tensors()[rank], round.got[rank], 0, h.nbytes);
        }
        // Ranks take their peers in staggered order, so that they do not all start with rank 0.
        for (int i = 1; i < size; i++) {
            int dst = (rank + i) % size;
            if (to[dst]) {
                postExchangeSend(round, sends, dst);
            }
        }
        for (int i = 1; i < size; i++) {
            int src = (rank + size - i) % size;
            if (from[src]) {
                receiveExchanged(round, src, op);
            }
        }
        round.awaitAll(op);
        Reference.reachabilityFence(sends);
        round.throwFirstFailure();
        return new Exchanged(round.got, round.invalid);
    }

    /** Posts this rank's message of an exchange to {@code dst}: its tensor, or its invalid code. */
    private void postExchangeSend(ExchangeInFlight round, Outgoing sends, int dst) {
        try {
            if (!sends.valid()) {
                ByteBuffer buf = round.headers[dst] = HeaderBuffers.take();
                TensorHeader.writeInvalid(buf.asLongBuffer(), 0, sends.invalidCode());
                round.requests.add(comm.iSend(buf, TensorHeader.BYTES, MPI.BYTE, dst, ShapeTag.HEADER));
                return;
            }
            TensorHeader h = sends.headers()[dst];
            Tensor data = sends.tensors()[dst];
            int tag = h.nbytes <= wire.chunkBytes() ? shapeTags.of(h) : ShapeTag.HEADER;
            if (tag != ShapeTag.HEADER) {
                round.requests.add(comm.iSend(TensorBytes.wire(data, 0, h.nbytes), (int) h.nbytes, MPI.BYTE,
                        dst, tag));
            } else {
                round.headers[dst] = HeaderBuffers.take();
                wire.postSend(comm, ShapeTag.HEADER, ShapeTag.PAYLOAD, h, data, round.headers[dst], dst, round.requests);
            }
        } catch (RuntimeException | MPIException e) {
            round.failures.add(e);
        }
    }

    /**
     * Probes the message of an exchange from {@code src} and posts its receive: straight into a
     * tensor for a tagged message, else after its header message. A message this rank cannot take
     * is received whole into scratch memory and recorded as a failure.
     */
    private void receiveExchanged(ExchangeInFlight round, int src, String op) {
        Message m = new Message();
        boolean matched = false; // probed, not yet received
        int count = 0;
        try {
            Status s = m.mProbe(src, MPI.ANY_TAG, comm);
            matched = true;
            int tag = s.getTag();
            count = s.getCount(MPI.BYTE);
            if (tag != ShapeTag.HEADER) {
                round.got[src] = shapeTags.read(tag, count, op, src).allocate();
                round.requests.add(m.imRecv(TensorBytes.wire(round.got[src], 0, count), count, MPI.BYTE));
                return;
            }
            String context = op + " from rank " + src; // not built for the tagged messages above
            if (count < TensorHeader.BYTES || count > HeaderBuffers.MESSAGE_BYTES) {
                throw new CommunicationException(context + ": received a header message of " + count
                        + " bytes, not an mn4j tensor header: mismatched calls of collectives?");
            }
            ByteBuffer buf = round.headers[size + src] = HeaderBuffers.take();
            m.mRecv(buf, count, MPI.BYTE);
            matched = false;
            LongBuffer longs = buf.asLongBuffer();
            if (TensorHeader.isInvalid(longs, 0)) {
                round.invalid.put(src, TensorHeader.invalidCode(longs, 0));
                return;
            }
            TensorHeader theirs = TensorHeader.read(longs, 0, context);
            round.got[src] = theirs.allocate();
            List<Request> chunks = new ArrayList<>();
            try {
                wire.postReceive(theirs, round.got[src], buf, src, ShapeTag.PAYLOAD, chunks, context);
            } finally {
                if (!chunks.isEmpty()) { // none for an inline payload, already copied
                    round.payloads.add(new AnnouncedPayload(src, theirs.nbytes, chunks));
                }
            }
        } catch (RuntimeException | MPIException e) {
            round.failures.add(e);
            round.got[src] = null;
            if (matched) {
                // Left matched, the message would never complete at its sender; received whole,
                // since a truncated receive may be written past its end (Open MPI 4.1).
                try {
                    m.mRecv(ByteBuffer.allocateDirect(Math.max(count, 1)), count, MPI.BYTE);
                } catch (MPIException again) {
                    e.addSuppressed(again);
                }
            }
        }
    }

    /** A payload announced by a header message: its chunk receives, checked against it once in. */
    private record AnnouncedPayload(int src, long nbytes, List<Request> chunks) {
    }

    /** The state of one {@link #run}: what arrived, and what is still in flight. */
    private static final class ExchangeInFlight {
        final Tensor[] got;
        final SortedMap<Integer, Long> invalid = new TreeMap<>();
        /** Header buffers, sent at [dst], received at [size + src]: given back once all is done. */
        final ByteBuffer[] headers;
        final List<Request> requests;
        final List<AnnouncedPayload> payloads = new ArrayList<>();
        /** Thrown once nothing is in flight any more. */
        final List<Exception> failures = new ArrayList<>();

        ExchangeInFlight(int size) {
            got = new Tensor[size];
            headers = new ByteBuffer[2 * size];
            requests = new ArrayList<>(2 * size);
        }

        /** Waits for every payload (receives first, as MPI's all-to-all), then every other request. */
        void awaitAll(String op) {
            for (AnnouncedPayload p : payloads) {
                long received = 0;
                for (Request r : p.chunks()) {
                    try {
                        received += r.waitStatus().getCount(MPI.BYTE);
                    } catch (MPIException e) {
                        failures.add(e);
                    }
                }
                if (received != p.nbytes()) { // a shorter message fits its receive silently
                    failures.add(Wire.payloadMismatch(op + ": the payload from rank " + p.src() + " has " + received
                            + " bytes where its header announced " + p.nbytes()));
                }
            }
            for (int i = requests.size() - 1; i >= 0; i--) {
                try {
                    requests.get(i).waitFor();
                } catch (MPIException e) {
                    failures.add(e);
                }
            }
            for (ByteBuffer b : headers) {
                HeaderBuffers.give(b);
            }
        }

        void throwFirstFailure() throws MPIException {
            if (failures.isEmpty()) {
                return;
            }
            Exception first = failures.get(0);
            failures.subList(1, failures.size()).forEach(first::addSuppressed);
            if (first instanceof MPIException mpi) {
                throw mpi;
            }
            throw (RuntimeException) first;
        }
    }
}
