package io.mn4j.examples;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;

/** Every program's {@code --help}: each example line in its footer is printed whole, so it can be copied and pasted. */
class HelpTest {
    static Stream<Object> programs() {
        return Stream.of(new Train(), new TrainDataParallel(), new TrainDualParallel(), new TrainEnsemble(), new TrainGnn(),
                new Partition());
    }

    @ParameterizedTest
    @MethodSource("programs")
    void everyFooterLineIsPrintedWhole(Object program) {
        CommandLine cl = new CommandLine(program);
        String help = cl.getUsageMessage();
        List<String> printed = help.lines().toList();
        for (String format : cl.getCommandSpec().usageMessage().footer()) {
            String line = String.format(Locale.ROOT, format); // picocli formats footers (%% is %)
            assertTrue(printed.contains(line), () -> cl.getCommandName() + ": the footer line\n" + line
                    + "\nis wrapped in --help (" + line.length() + " characters, the help is "
                    + cl.getUsageHelpWidth() + " wide):\n" + help);
        }
    }
}
