package io.mn4j.communicator;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.function.Supplier;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;
import mpi.Request;
import mpi.Status;

/**
 * The {@link Watchdog}'s side channel, a duplicate of MPI_COMM_WORLD: a rank whose call has waited
 * too long asks every other rank what it is doing, and each rank's watchdog answers with the calls
 * it is in. Nonblocking messages only, so that a rank that is stopped or cut off is simply one that
 * does not answer. Used by the watchdog thread alone, under {@link MpiJob#unlessFinished}.
 */
final class RollCall {
    private static final int QUESTION = 1;
    private static final int ANSWER = 2;
    /** Longer answers (a rank with hundreds of threads in calls) are cut. */
    private static final int MAX_ANSWER_BYTES = 16 * 1024;

    private final Intracomm channel;
    private final int rank;
    private final int size;
    private final ByteBuffer questionIn = MPI.newByteBuffer(1);
    /** The receive for the next question, from any rank. */
    private Request question;
    /** Messages sent and their buffers, kept until they complete (a stopped rank's never do). */
    private final List<Sent> sent = new ArrayList<>();
    private Request[] answerRequests;
    private ByteBuffer[] answerBuffers;

    private record Sent(Request request, ByteBuffer buffer) {
    }

    /** Listens for questions on {@code channel}, which only the roll call uses. */
    RollCall(Intracomm channel) throws MPIException {
        this.channel = channel;
        this.rank = channel.getRank();
        this.size = channel.getSize();
        this.question = channel.iRecv(questionIn, 1, MPI.BYTE, MPI.ANY_SOURCE, QUESTION);
    }

    /** Answers the questions that have arrived with {@code state} (what this rank is doing); never waits. */
    void answer(Supplier<String> state) throws MPIException {
        Status s;
        while ((s = question.testStatus()) != null) {
            send(s.getSource(), ANSWER, state.get());
            question = channel.iRecv(questionIn, 1, MPI.BYTE, MPI.ANY_SOURCE, QUESTION);
        }
        for (Iterator<Sent> it = sent.iterator(); it.hasNext();) {
            if (it.next().request().test()) {
                it.remove();
            }
        }
    }

    /** Asks every other rank what it is doing; {@link #collect} gathers the answers. */
    void ask() throws MPIException {
        answerRequests = new Request[size];
        answerBuffers = new ByteBuffer[size];
        for (int r = 0; r < size; r++) {
            if (r != rank) {
                answerBuffers[r] = MPI.newByteBuffer(MAX_ANSWER_BYTES);
                answerRequests[r] = channel.iRecv(answerBuffers[r], MAX_ANSWER_BYTES, MPI.BYTE, r, ANSWER);
                send(r, QUESTION, " ");
            }
        }
    }

    /**
     * Puts the answers that have arrived since {@link #ask} into {@code answers} (by world rank;
     * this rank's slot and those of ranks yet to answer stay null); true once every rank answered.
     */
    boolean collect(String[] answers) throws MPIException {
        boolean all = true;
        for (int r = 0; r < size; r++) {
            if (r == rank || answers[r] != null) {
                continue;
            }
            Status s = answerRequests[r].testStatus();
            if (s == null) {
                all = false;
                continue;
            }
            byte[] text = new byte[s.getCount(MPI.BYTE)];
            answerBuffers[r].get(0, text);
            answers[r] = new String(text, StandardCharsets.UTF_8).strip();
        }
        return all;
    }

    /** Stops listening (MPI is about to be finalized); the channel itself goes with MPI. */
    void close() throws MPIException {
        question.cancel();
        question.waitFor(); // a cancelled receive completes at once, and frees the request
    }

    private void send(int to, int tag, String text) throws MPIException {
        byte[] bytes = text.isEmpty() ? new byte[] {' '} : text.getBytes(StandardCharsets.UTF_8);
        int n = Math.min(bytes.length, MAX_ANSWER_BYTES);
        ByteBuffer b = MPI.newByteBuffer(n);
        b.put(bytes, 0, n);
        sent.add(new Sent(channel.iSend(b, n, MPI.BYTE, to, tag), b));
    }
}
