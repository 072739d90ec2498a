package io.mn4j.mpitests.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's "Use mn4j in your project" as a user follows it: its POM and its model split over
 * two ranks, taken from the README itself, built as a separate Maven project against the
 * installed artifacts ({@code ./test.sh} installs them first), then run on 2 ranks with the
 * launcher the README names. So the section cannot go stale.
 */
class UserProjectTest {
    private static final Path README = Path.of("..", "README.md");

    @Test
    void theReadmeProjectBuildsAgainstTheInstalledArtifactsAndTrains(@TempDir(cleanup = CleanupMode.ON_SUCCESS) Path project)
            throws Exception {
        String readme = Files.readString(README, StandardCharsets.UTF_8);
        String section = readme.substring(readme.indexOf("## Use mn4j in your project"));
        Files.writeString(project.resolve("pom.xml"), block(section, "xml", ""));
        Path source = project.resolve("src/main/java/org/example/SplitMlp.java");
        Files.createDirectories(source.getParent());
        Files.writeString(source, block(readme, "java", "package org.example;"));

        Process build = run(project, project.resolve("build.log"), "mvn", "-B", "-q", "package");
        String built = log(project.resolve("build.log"));
        assertEquals(0, build.exitValue(), () -> "mvn package failed:\n" + built);

        String classPath = "target/classes" + File.pathSeparator + "target/lib/*";
        Path launcher = Path.of("..", "scripts", "mn4j-run").toAbsolutePath().normalize();
        Process job = run(project, project.resolve("run.log"), launcher.toString(), "-np", "2", "-cp", classPath,
                "org.example.SplitMlp");
        String out = log(project.resolve("run.log"));
        assertEquals(0, job.exitValue(), () -> "the job failed:\n" + out);
        Matcher loss = Pattern.compile("final loss (\\d+\\.\\d+)").matcher(out);
        assertTrue(loss.find(), () -> "no final loss in:\n" + out);
        // It trains: from about ln 2 on 64 points a linear rule separates (the gradients across the
        // ranks are checked against one process by FunctionsSuite; here the packaging is on trial).
        assertTrue(Double.parseDouble(loss.group(1)) < 0.05, () -> "the split model did not learn:\n" + out);
    }

    /** The first fenced block of {@code language} in {@code text} that starts with {@code start}. */
    private static String block(String text, String language, String start) {
        Matcher m = Pattern.compile("```" + language + "\n(" + Pattern.quote(start) + ".*?)```", Pattern.DOTALL).matcher(text);
        assertTrue(m.find(), () -> "README has no ```" + language + " block starting with '" + start + "'");
        return m.group(1);
    }

    /** Runs a command in {@code dir}, its output in {@code log} (never this JVM's stdout, Surefire's channel). */
    private static Process run(Path dir, Path log, String... command) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(List.of(command)).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(log.toFile());
        Process p = pb.start();
        if (!p.waitFor(600, TimeUnit.SECONDS)) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            throw new AssertionError(String.join(" ", command) + " did not end in 600 s:\n" + log(log));
        }
        return p;
    }

    private static String log(Path file) throws IOException {
        return Files.exists(file) ? Files.readString(file, StandardCharsets.UTF_8) : "(no output)";
    }
}
