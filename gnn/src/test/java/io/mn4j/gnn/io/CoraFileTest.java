package io.mn4j.gnn.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where Cora is found: {@link CoraFile#find} on temporary directory trees. */
class CoraFileTest {
    @TempDir
    Path base;

    /** base/work/checkout/module, the working directory of a module's tests. */
    private Path module() throws IOException {
        return Files.createDirectories(base.resolve("work/checkout/module"));
    }

    private Path cora(String place) throws IOException {
        Path p = base.resolve(place);
        Files.createDirectories(p.getParent());
        return Files.writeString(p, "npz");
    }

    @Test
    void theEnvironmentVariableWinsEvenOverAFileNearby() throws IOException {
        Path module = module();
        cora("work/checkout/module/datasets/cora.npz");
        assertEquals(Path.of("/elsewhere/cora.npz"), CoraFile.find("/elsewhere/cora.npz", module, List.of()));
    }

    @Test
    void theSharedFolderBesideTheCheckoutIsFoundFromAModule() throws IOException {
        Path module = module();
        Path shared = cora("work/shared/datasets/cora.npz");
        assertEquals(shared, CoraFile.find(null, module, List.of()));
        assertEquals(shared, CoraFile.find("  ", module, List.of()));
    }

    @Test
    void theNearestDirectoryComesFirst() throws IOException {
        Path module = module();
        cora("work/shared/datasets/cora.npz");
        Path own = cora("work/checkout/datasets/cora.npz");
        assertEquals(own, CoraFile.find(null, module, List.of()));
        Path moduleOwn = cora("work/checkout/module/datasets/cora.npz");
        assertEquals(moduleOwn, CoraFile.find(null, module, List.of()));
    }

    @Test
    void theLastResortComesAfterEverythingNearby() throws IOException {
        Path module = module();
        assumeTrue(foundFrom(base) == null, "a cora.npz outside the temporary directory is in the way");
        Path far = cora("far/cora.npz");
        assertEquals(far, CoraFile.find(null, module, List.of(base.resolve("missing.npz"), far)));
        Path shared = cora("work/shared/datasets/cora.npz");
        assertEquals(shared, CoraFile.find(null, module, List.of(far)));
    }

    @Test
    void notFoundSaysWhereItLookedAndWhatToSet() throws IOException {
        Path module = module();
        assumeTrue(foundFrom(base) == null, "a cora.npz outside the temporary directory is in the way");
        NoSuchFileException e = assertThrows(NoSuchFileException.class, () -> CoraFile.find(null, module, List.of()));
        String message = e.getMessage();
        for (String part : new String[] {module.resolve("datasets/cora.npz").toString(),
                base.resolve("work/shared/datasets/cora.npz").toString(), "MN4J_CORA", "Planetoid Cora",
                "gnn-benchmark", "train_idx"}) {
            assertTrue(message.contains(part), () -> "no '" + part + "' in: " + message);
        }
    }

    private static Path foundFrom(Path dir) {
        try {
            return CoraFile.find(null, dir, List.of());
        } catch (NoSuchFileException e) {
            return null;
        }
    }
}
