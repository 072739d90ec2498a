package io.mn4j.bench;

import io.mn4j.communicator.Communicator;
import java.util.function.Function;
import picocli.CommandLine;

/** The {@code main} of a benchmark that runs on every rank of an MPI job as a picocli command. */
final class MpiCommand {
    private MpiCommand() {
    }

    /**
     * Starts the job, builds the command for the world communicator, runs it on {@code args} and
     * exits with its code once MPI is finalized.
     */
    static void main(String[] args, Function<Communicator, Object> command) {
        int[] code = new int[1];
        Communicator.run(world -> code[0] = new CommandLine(command.apply(world)).execute(args));
        System.exit(code[0]);
    }
}
