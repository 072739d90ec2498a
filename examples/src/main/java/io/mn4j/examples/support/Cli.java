package io.mn4j.examples.support;

import java.io.PrintWriter;
import java.io.StringWriter;
import picocli.CommandLine;

/**
 * Runs a picocli command as the main of an MPI program. Under {@code mpirun}, every rank parses
 * the same arguments, but only rank 0 prints help, version and usage errors (so they appear
 * once). The exit code is the command's.
 */
public final class Cli {
    private Cli() {
    }

    /** Rank in the job before MPI is initialized (from Open MPI's environment; 0 outside mpirun). */
    public static int launchRank() {
        String r = System.getenv("OMPI_COMM_WORLD_RANK");
        if (r == null) {
            r = System.getenv("PMIX_RANK");
        }
        try {
            return r == null ? 0 : Integer.parseInt(r.trim());
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    /** "1 rank", "4 ranks": for run headers and chart titles. */
    public static String ranks(int n) {
        return n + (n == 1 ? " rank" : " ranks");
    }

    /** Parses {@code args} for {@code command}, runs it and exits with its code. */
    public static void main(Object command, String[] args) {
        CommandLine cl = new CommandLine(command);
        if (launchRank() != 0) {
            cl.setOut(new PrintWriter(new StringWriter()));
            cl.setErr(new PrintWriter(new StringWriter()));
        }
        int code = cl.execute(args);
        System.out.flush();
        System.exit(code);
    }
}
