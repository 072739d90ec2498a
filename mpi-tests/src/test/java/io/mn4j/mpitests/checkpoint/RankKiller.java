package io.mn4j.mpitests.checkpoint;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.Random;
import java.util.function.Consumer;

/**
 * Kills one rank of a running {@code mpirun} job with SIGKILL (as the out-of-memory killer does)
 * once its output shows enough progress: after the n-th line containing a marker, and a random
 * delay, so that the kill lands anywhere, between checkpoints or in the middle of one.
 */
final class RankKiller implements Consumer<Process> {
    private final Path log;
    private final String marker;
    private final int after;
    private final int rank;
    private final long delayMillis;
    private volatile String what = "nothing killed";

    /**
     * @param log    the job's output (mpirun's log)
     * @param marker the line fragment that counts progress
     * @param seed   chooses how many markers to wait for (1 to {@code most}), the rank and the delay
     */
    RankKiller(Path log, String marker, int most, int ranks, long seed) {
        Random r = new Random(seed);
        this.log = log;
        this.marker = marker;
        this.after = 1 + r.nextInt(most);
        this.rank = r.nextInt(ranks);
        this.delayMillis = r.nextInt(400);
    }

    /** What was done, for messages. */
    String what() {
        return what;
    }

    @Override
    public void accept(Process mpirun) {
        try {
            while (mpirun.isAlive() && count() < after) {
                Thread.sleep(50);
            }
            Thread.sleep(delayMillis);
            Optional<ProcessHandle> victim = mpirun.descendants().filter(h -> rankOf(h) == rank).findFirst();
            if (victim.isPresent() && mpirun.isAlive()) {
                new ProcessBuilder("kill", "-KILL", String.valueOf(victim.get().pid())).start().waitFor();
                what = "rank " + rank + " killed " + delayMillis + " ms after marker " + after;
            }
        } catch (IOException e) {
            what = "could not kill: " + e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private int count() throws IOException {
        if (!Files.exists(log)) {
            return 0;
        }
        return (int) Files.readAllLines(log, StandardCharsets.UTF_8).stream().filter(l -> l.contains(marker)).count();
    }

    /** The MPI rank of a process of the job (from its environment), -1 if it is not a rank. */
    private static int rankOf(ProcessHandle h) {
        try {
            String env = Files.readString(Path.of("/proc", String.valueOf(h.pid()), "environ"), StandardCharsets.ISO_8859_1);
            for (String kv : env.split("\0")) {
                if (kv.startsWith("OMPI_COMM_WORLD_RANK=") && h.info().command().orElse("").endsWith("java")) {
                    return Integer.parseInt(kv.substring(kv.indexOf('=') + 1));
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1; // ended meanwhile, or not ours to read
        }
        return -1;
    }
}
