package io.mn4j.examples.support;

import io.mn4j.communicator.JobInputException;
import io.mn4j.communicator.Versions;
import java.io.PrintWriter;
import java.io.StringWriter;
import picocli.CommandLine;

/**
 * Runs a picocli command as the main of an MPI program. Under {@code mpirun}, every rank parses
 * the same arguments, but only rank 0 prints help, version and usage errors (so they appear
 * once). A bad option or input is one line naming it and a hint to {@code --help}, exit code 2,
 * no stack trace; otherwise the exit code is the command's.
 */
public final class Cli {
    private Cli() {
    }

    /** Rank in the job before MPI is initialized (from Open MPI's environment; 0 outside mpirun). */
    public static int launchRank() {
        return fromEnvironment(0, "OMPI_COMM_WORLD_RANK", "PMIX_RANK");
    }

    /** Ranks in the job before MPI is initialized (from Open MPI's environment; 1 outside mpirun). */
    public static int launchSize() {
        return fromEnvironment(1, "OMPI_COMM_WORLD_SIZE");
    }

    /** The first of {@code names} set in the environment, as an int; {@code fallback} if none is. */
    private static int fromEnvironment(int fallback, String... names) {
        for (String name : names) {
            String v = System.getenv(name);
            if (v != null) {
                try {
                    return Integer.parseInt(v.trim());
                } catch (NumberFormatException e) {
                    return fallback;
                }
            }
        }
        return fallback;
    }

    /** "1 rank", "4 ranks": for run headers and chart titles. */
    public static String ranks(int n) {
        return n + (n == 1 ? " rank" : " ranks");
    }

    /** Exit code of a bad option or input, as picocli's own usage errors. */
    public static final int USAGE = 2;

    /** Parses {@code args} for {@code command}, runs it and exits with its code. */
    public static void main(Object command, String[] args) {
        CommandLine cl = new CommandLine(command);
        if (launchRank() != 0) {
            cl.setOut(new PrintWriter(new StringWriter()));
            cl.setErr(new PrintWriter(new StringWriter()));
        }
        cl.getCommandSpec().versionProvider(() -> new String[] {Versions.describe()});
        cl.setParameterExceptionHandler((e, given) -> usageError(e.getCommandLine(), e.getMessage()));
        cl.setExecutionExceptionHandler((e, line, parsed) -> {
            if (isInputError(e)) {
                return usageError(line, e.getMessage());
            }
            throw e;
        });
        int code = cl.execute(args);
        System.out.flush();
        if (code == USAGE && launchRank() != 0) {
            giveRankZeroTimeToReport();
        }
        System.exit(code);
    }

    /**
     * A muted rank that refused its options waits before exiting: mpirun kills the job when the
     * first rank fails, and rank 0, which says why, must not be killed before it has said so.
     */
    private static void giveRankZeroTimeToReport() {
        try {
            Thread.sleep(3000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** An option value or input that the program refused: the user's to fix, not a bug to trace. */
    private static boolean isInputError(Exception e) {
        return e instanceof IllegalArgumentException || e instanceof JobInputException;
    }

    private static int usageError(CommandLine line, String message) {
        String name = line.getCommandName();
        line.getErr().println(name + ": " + message);
        line.getErr().println("Try '" + name + " --help' for the options and their allowed values.");
        line.getErr().flush();
        return USAGE;
    }
}
