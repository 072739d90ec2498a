package io.mn4j.mpitests.examples;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mn4j.examples.CommunicatorTour;
import io.mn4j.mpitests.MpiLauncher;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The README's runnable example, {@link CommunicatorTour}, on 1 to 4 ranks: it checks every result
 * itself and ends the job on a wrong one, so a run that completes with its last line passed.
 */
class CommunicatorTourTest {
    @ParameterizedTest(name = "{0} rank(s)")
    @ValueSource(ints = {1, 2, 3, 4})
    void everyStepGivesWhatItMust(int ranks, @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path dir) throws Exception {
        MpiLauncher.Result r = MpiLauncher.run(ranks, CommunicatorTour.class.getName(), List.of(), dir, 120);
        ExamplesTest.assertCompleted(r);
        String out = r.output();
        assertTrue(out.contains("allreduce of rank + 1: SUM " + ranks * (ranks + 1) / 2 + ".0, MAX " + ranks + ".0"),
                r::describe);
        assertTrue(out.contains("tour done: every result as expected"), r::describe);
    }
}
