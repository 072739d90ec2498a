package io.mn4j.communicator;

import java.util.Locale;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.openblas.presets.openblas_nolapack;
import org.bytedeco.pytorch.global.torch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.helpers.NOPLoggerFactory;

/**
 * The life of an MPI job in one process: initialization of MPI and LibTorch, the rule that a
 * failure on any rank ends every rank, and finalization once no communicator call is running.
 */
final class MpiJob {
    private static final Logger LOG = LoggerFactory.getLogger(MpiJob.class);
    private static volatile boolean started;
    /** This process's rank in MPI_COMM_WORLD, for messages; -1 before {@link #start}. */
    private static volatile int worldRank = -1;
    /** The number of ranks in MPI_COMM_WORLD; 0 before {@link #start}. */
    private static volatile int worldSize;
    private static volatile boolean failing;
    /** How long a failing rank waits for MPI_Abort to end it before it halts by itself. */
    private static final long HALT_AFTER_SECONDS = 5;
    /** True while {@link #run} runs the job's body. */
    private static volatile boolean bodyRunning;
    /** MPI granted THREAD_MULTIPLE: threads of mn4j's own may call MPI. */
    private static volatile boolean threadMultiple;
    /** MPI is finalized (or was never initialized here and is gone). */
    private static volatile boolean finished;
    /**
     * How long the end of a job waits for communicator calls still running on other threads
     * ({@code -Dmn4j.endWaitSeconds}, 0 to a day; 0: the job fails at once if one is running).
     */
    private static final long END_WAIT_SECONDS = Math.max(0, Math.min(86_400, Long.getLong("mn4j.endWaitSeconds", 30)));

    private MpiJob() {
    }

    /** The body of a job for {@link #run}. */
    @FunctionalInterface
    interface Body {
        void run() throws Exception;
    }

    /**
     * Initializes MPI (THREAD_MULTIPLE) and LibTorch once, installs the handler that ends the
     * whole job when any thread throws, and sets LibTorch's threads for the ranks on this node.
     */
    static synchronized void start() {
        if (started) {
            return;
        }
        try {
            if (!MPI.isInitialized()) {
                int provided = MPI.InitThread(new String[0], MPI.THREAD_MULTIPLE);
                if (provided < MPI.THREAD_MULTIPLE) {
                    warn("MPI granted thread level " + provided + " < THREAD_MULTIPLE: call MPI from one thread at a time");
                }
            }
            threadMultiple = MPI.queryThread() == MPI.THREAD_MULTIPLE;
            worldRank = MPI.COMM_WORLD.getRank();
            worldSize = MPI.COMM_WORLD.getSize();
            JobLayout.learn();
            Watchdog.start(threadMultiple);
            Thread.setDefaultUncaughtExceptionHandler((thread, error) -> fail(error));
            Intracomm node = MPI.COMM_WORLD.splitType(Intracomm.TYPE_SHARED, 0, MPI.INFO_NULL);
            loadLibTorchOneRankPerNodeFirst(node);
            setThreads(node.getSize());
            node.free();
            started = true;
            Runtime.getRuntime().addShutdownHook(new Thread(MpiJob::finishAtExit, "mn4j-finalize"));
        } catch (MPIException e) {
            throw new CommunicationException("MPI initialization failed: " + e.getMessage(), e);
        }
    }

    /**
     * Runs {@code body}; an exception escaping it ends the whole job, except bad input that every
     * rank throws at the same point ({@link JobInputException#onEveryRank()}), which ends the job
     * normally and is thrown on. Then finalizes MPI once the calls still running on other threads
     * end ({@link #finishWhenCallsEnd}).
     *
     * @throws JobInputException the body's, on every rank, after MPI is finalized
     */
    static void run(Body body) {
        JobInputException everyRank = null;
        try {
            bodyRunning = true;
            body.run();
        } catch (JobInputException e) {
            if (!e.onEveryRank()) {
                fail(e);
            }
            everyRank = e;
        } catch (Throwable t) {
            fail(t);
        } finally {
            bodyRunning = false;
        }
        finishWhenCallsEnd(everyRank == null ? "the job's body returned" : "every rank stopped on bad input");
        if (everyRank != null) {
            throw everyRank;
        }
    }

    /**
     * Finalizes MPI once no thread is inside a communicator call: threads the program started may
     * still be receiving when its main thread is done, and MPI finalized under a thread inside it
     * crashes the rank (SIGSEGV). A call that does not end within {@link #END_WAIT_SECONDS} ends the
     * job, all ranks, naming the cause: it waits for a peer that is not going to answer.
     */
    static void finishWhenCallsEnd(String event) {
        MpiCalls.refuseNew(worldRank, event);
        int running = MpiCalls.inProgress();
        if (running > 0 && !failing) {
            warn(event + " on rank " + worldRank + " while " + running + " communicator call(s) run on other threads;"
                    + " waiting up to " + END_WAIT_SECONDS + " s for them");
            long deadline = System.nanoTime() + END_WAIT_SECONDS * 1_000_000_000L;
            boolean interrupted = false;
            while ((running = MpiCalls.inProgress()) > 0) {
                if (failing) {
                    return; // another thread's failure is ending the job
                }
                if (System.nanoTime() - deadline > 0) {
                    fail(new IllegalStateException(event + " on rank " + worldRank + " while " + running
                            + " communicator call(s) still ran on other threads, and they did not end within "
                            + END_WAIT_SECONDS + " s (-Dmn4j.endWaitSeconds): join the threads that communicate"
                            + " before the job ends"));
                }
                try {
                    Thread.sleep(1);
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        finish();
    }

    /**
     * JavaCPP unpacks LibTorch's native libraries into a cache on first use; two processes doing
     * it at once corrupt it (SIGBUS in dlopen). The first rank of each node loads them, then the rest.
     */
    private static void loadLibTorchOneRankPerNodeFirst(Intracomm node) throws MPIException {
        boolean first = node.getRank() == 0;
        if (first) {
            Loader.load(torch.class);
        }
        node.barrier();
        if (!first) {
            Loader.load(torch.class);
        }
    }

    private static void setThreads(int ranksOnNode) {
        int cores = Runtime.getRuntime().availableProcessors();
        int threads = envInt("MN4J_THREADS", Math.max(1, cores / ranksOnNode));
        torch.set_num_threads(threads);
        // OpenBLAS's spinning pool and LibTorch's OpenMP workers on the same cores starve each
        // other (a 1-rank MLP epoch ran 10x slower with 2 + 2 threads than with 2 + 1): BLAS runs
        // on the calling thread unless MN4J_BLAS_THREADS says otherwise.
        int blas = envInt("MN4J_BLAS_THREADS", 1);
        openblas_nolapack.blas_set_num_threads(blas);
        LOG.debug("LibTorch intra-op threads: {}, OpenBLAS threads: {} ({} cores, {} ranks on this node)", threads, blas, cores,
                ranksOnNode);
    }

    /** The integer in environment variable {@code name}, or {@code otherwise} when it is unset. */
    /** A warning that matters to the run: logged, and on stderr too when SLF4J has no provider to show it. */
    private static void warn(String message) {
        LOG.warn(message);
        if (LoggerFactory.getILoggerFactory() instanceof NOPLoggerFactory) {
            System.err.println("mn4j: " + message);
        }
    }

    private static int envInt(String name, int otherwise) {
        String v = System.getenv(name);
        return v != null ? Integer.parseInt(v.trim()) : otherwise;
    }

    /** Prints the failure and ends every rank of the job, non-zero. */
    static void fail(Throwable error) {
        if (failing) {
            return;
        }
        failing = true;
        // stderr on purpose: the one message that must reach the user even without a logger
        System.err.println("mn4j: rank " + worldRank + " failed, ending the job: " + error);
        error.printStackTrace(System.err);
        System.err.flush();
        haltLater();
        try {
            MPI.COMM_WORLD.abort(1);
        } catch (Throwable t) {
            Runtime.getRuntime().halt(1);
        }
        Runtime.getRuntime().halt(1);
    }

    /**
     * Ends this process {@link #HALT_AFTER_SECONDS} from now unless it has ended by then: MPI_Abort
     * may never return where mpirun cannot be reached (this host cut off), and the rank must end.
     */
    private static void haltLater() {
        Thread halt = new Thread(() -> {
            try {
                Thread.sleep(HALT_AFTER_SECONDS * 1000);
            } catch (InterruptedException e) {
                // halt now
            }
            System.err.println("mn4j: rank " + worldRank + ": MPI_Abort did not end this process within "
                    + HALT_AFTER_SECONDS + " s; halting it");
            System.err.flush();
            Runtime.getRuntime().halt(1);
        }, "mn4j-halt");
        halt.setDaemon(true);
        halt.start();
    }

    /**
     * At JVM exit: finalizes MPI only when the job has ended. An exit in the middle of a job
     * (mpirun's SIGTERM on Ctrl-C, System.exit) may find a thread inside MPI, which finalization
     * would crash; the job is being torn down anyway.
     */
    private static void finishAtExit() {
        if (failing) {
            return;
        }
        if (bodyRunning || MpiCalls.inProgress() > 0) {
            // stderr on purpose, as in fail(): the user must learn why the rank ended, and where
            // the job's ranks ran, for mpirun's report of a lost host, which names no rank
            System.err.println("mn4j: " + JobLayout.rank(worldRank) + ": the JVM is exiting in the middle of the job"
                    + " (a signal such as mpirun's SIGTERM, or System.exit); MPI is not finalized"
                    + inCalls() + JobLayout.acrossHosts());
            System.err.flush();
            return;
        }
        finish();
    }

    /** ", inside allreduce on the world communicator (its collective call 7) for at least 2.1 s", or nothing. */
    private static String inCalls() {
        long now = System.nanoTime();
        StringBuilder sb = new StringBuilder();
        for (OpenCall.Snapshot s : MpiCalls.open()) {
            sb.append(sb.length() == 0 ? ", inside " : " and ").append(s.describe())
                    .append(String.format(Locale.ROOT, " for at least %.1f s", s.seconds(now)));
        }
        return sb.toString();
    }

    /** The number of ranks of the job. */
    static int worldSize() {
        return worldSize;
    }

    /** This process's rank in MPI_COMM_WORLD; -1 before {@link #start}. */
    static int worldRank() {
        return worldRank;
    }

    static boolean threadMultiple() {
        return threadMultiple;
    }

    /**
     * Runs {@code work} (MPI calls of a thread of mn4j's own) unless MPI is finalized, never at
     * the same time as finalization; false when it did not run.
     */
    static synchronized boolean unlessFinished(Runnable work) {
        if (finished || failing) {
            return false;
        }
        work.run();
        return true;
    }

    static synchronized void finish() {
        if (failing) {
            return;
        }
        try {
            if (MPI.isInitialized() && !MPI.isFinalized()) {
                finished = true;
                Watchdog.stop();
                MPI.Finalize();
            }
        } catch (MPIException e) {
            LOG.warn("MPI_Finalize failed: {}", e.getMessage());
        }
    }
}
