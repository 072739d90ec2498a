package io.mn4j.checkpoint;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mn4j.communicator.Agreement;
import io.mn4j.communicator.Communicator;
import io.mn4j.communicator.Versions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.function.Consumer;
import org.bytedeco.pytorch.InputArchive;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Checkpoints of a multi-rank job in node-local directories (no shared file system needed),
 * ChainerMN's {@code multi_node_snapshot} made crash-safe. Every method is collective.
 *
 * <p>{@link #save} writes each rank's part into {@code <dir>/rank-<r>/step-<step>.tmp} (files
 * forced to the disk), gathers every rank's file sizes and SHA-256 digests into one manifest,
 * writes it into each rank's folder and renames the folder into place; only once every rank has
 * done so are checkpoints beyond the newest {@code keep} deleted. So whatever instant a rank dies
 * at, every rank still holds the newest checkpoint that is complete everywhere. Replicated state
 * (the same on every rank) is kept by rank 0 only, and every other rank's copy is compared with
 * it: replicas that have diverged stop the job instead of being saved.
 *
 * <p>{@link #restore} picks the newest checkpoint complete on every rank (the same manifest on
 * each), checks every rank's files against their digests, and loads them; rank 0 broadcasts the
 * replicated part. Each rank's random generator (LibTorch's default CPU generator) is saved and
 * restored with it. Bad input is a {@link io.mn4j.communicator.JobInputException} on every rank:
 * a corrupt or truncated part, a checkpoint of another job size or identity (model, partitioning:
 * whatever the job passes as identity). A checkpoint missing on some rank is passed over, saying so.
 */
public final class Checkpointer {
    private static final Logger LOG = LoggerFactory.getLogger(Checkpointer.class);

    private final Communicator comm;
    private final Path dir;
    private final int keep;
    private final TreeMap<String, String> identity;
    private final RankDirectory mine;
    private String note = "";

    /** What a save cost. */
    public record Saved(long step, long bytesThisRank, long bytesAllRanks, double seconds) {
    }

    /**
     * @param dir      the checkpoint directory, on each rank's own host (the same path everywhere)
     * @param keep     how many checkpoints to keep, at least 1
     * @param identity what a resuming job must match (model, data, partitioning...), by name;
     *                 the same on every rank
     */
    public Checkpointer(Communicator comm, Path dir, int keep, Map<String, String> identity) {
        if (keep < 1) {
            throw new IllegalArgumentException("keep at least 1 checkpoint, got " + keep);
        }
        this.comm = Objects.requireNonNull(comm);
        this.dir = dir.toAbsolutePath().normalize();
        this.keep = keep;
        this.identity = new TreeMap<>(identity);
        this.mine = new RankDirectory(this.dir, comm.rank());
        Agreement.requireSame(comm, "checkpoint directory, number kept and identity", this.dir + " " + keep + " " + this.identity);
    }

    /** The checkpoint directory. */
    public Path directory() {
        return dir;
    }

    /**
     * Saves a checkpoint of step {@code step} (an iteration or epoch count that grows from save to
     * save): {@code what} puts this rank's state into the writer; the ranks must put the same names.
     */
    public Saved save(long step, Consumer<CheckpointWriter> what) {
        long t0 = System.nanoTime();
        CheckpointWriter w = new CheckpointWriter();
        try {
            Agreement.agree(comm, "collecting checkpoint " + step, () -> {
                what.accept(w);
                try (Tensor rng = torch.getDefaultCPUGenerator().get_state()) {
                    w.own().write("rng", rng);
                }
                return null;
            });
            Agreement.requireSame(comm, "checkpoint contents", w.contents());
            checkReplicas(step, w);
            Path tmp = mine.temporary(step);
            TreeMap<String, Manifest.FileEntry> files = Agreement.agree(comm,
                    "writing checkpoint " + step + " to " + tmp, () -> writePart(w, tmp));
            List<TreeMap<String, Manifest.FileEntry>> all = comm.allgatherObj(files);
            Manifest m = new Manifest(Manifest.FORMAT, Versions.mn4j(), comm.size(), step, identity, w.contents(), all);
            Agreement.agree(comm, "committing checkpoint " + step + " in " + mine.root(), () -> {
                commit(m, tmp, mine.committed(step));
                return null;
            });
            // Every rank has committed: older checkpoints are no longer anyone's newest complete one.
            List<Long> gone = Agreement.agree(comm, "deleting old checkpoints in " + mine.root(), () -> mine.keepNewest(keep));
            long own = files.values().stream().mapToLong(f -> f.bytes()).sum();
            long total = all.stream().flatMap(f -> f.values().stream()).mapToLong(f -> f.bytes()).sum();
            double seconds = (System.nanoTime() - t0) / 1e9;
            LOG.debug("rank {}: checkpoint {} saved, {} bytes here, {} in all, {} s; deleted {}", comm.rank(), step, own, total,
                    seconds, gone);
            return new Saved(step, own, total, seconds);
        } finally {
            w.close();
        }
    }

    private TreeMap<String, Manifest.FileEntry> writePart(CheckpointWriter w, Path tmp) throws IOException {
        DurableFiles.deleteTree(tmp);
        Files.createDirectories(tmp);
        TreeMap<String, Manifest.FileEntry> files = new TreeMap<>();
        ArchiveBytes.Written own = ArchiveBytes.toFile(w.own(), tmp.resolve(RankDirectory.OWN));
        files.put(RankDirectory.OWN, new Manifest.FileEntry(own.bytes(), own.sha256()));
        byte[] values = ValueCodec.toBytes(w.values());
        files.put(RankDirectory.VALUES, new Manifest.FileEntry(values.length,
                DurableFiles.writeForced(tmp.resolve(RankDirectory.VALUES), values)));
        if (w.hasReplicated() && comm.rank() == 0) {
            ArchiveBytes.Written rep = ArchiveBytes.toFile(w.replicated(), tmp.resolve(RankDirectory.REPLICATED));
            files.put(RankDirectory.REPLICATED, new Manifest.FileEntry(rep.bytes(), rep.sha256()));
        }
        return files;
    }

    /** Stops every rank if some rank's replicated modules differ from rank 0's. */
    private void checkReplicas(long step, CheckpointWriter w) {
        if (!w.hasReplicated()) {
            return;
        }
        String mineRep = w.replicaDigest();
        String reference = comm.bcastObj(mineRep, 0);
        String problem = mineRep.equals(reference) ? null
                : "rank " + comm.rank() + "'s replicated state (parameters and buffers with SHA-256 " + mineRep + ") differs from rank 0's ("
                        + reference + "): the replicas have diverged";
        Agreement.noProblems(comm, "checking the replicas of checkpoint " + step, problem);
    }

    private static void commit(Manifest m, Path tmp, Path target) throws IOException {
        DurableFiles.writeForced(tmp.resolve(RankDirectory.MANIFEST), m.toJson());
        DurableFiles.forceDirectory(tmp);
        if (Files.exists(target)) {
            // a checkpoint of an abandoned run's future (this step is being saved again): replaced
            DurableFiles.deleteTree(target);
        }
        DurableFiles.renameDurably(tmp, target);
    }

    /**
     * Restores the newest checkpoint complete on every rank, or returns null when there is none
     * (then the job starts from the beginning); {@link #note()} says which and why.
     */
    public CheckpointReader restore() {
        List<ResumeChoice.Found> found = Agreement.agree(comm, "looking for checkpoints in " + mine.root(), this::scan);
        ResumeChoice.Outcome choice = ResumeChoice.choose(
                new ArrayList<List<ResumeChoice.Found>>(comm.allgatherObj(new ArrayList<>(found))), comm.size(), dir.toString());
        Agreement.noProblems(comm, "resuming from " + dir, comm.rank() == 0 ? choice.problem() : null);
        note = choice.note();
        if (comm.rank() == 0) {
            LOG.debug(note);
        }
        if (choice.step() < 0) {
            return null;
        }
        long step = choice.step();
        Path here = mine.committed(step);
        Manifest m = Agreement.agree(comm, "checking checkpoint " + step + " in " + here, () -> verify(here));
        List<Long> abandoned = Agreement.agree(comm, "removing checkpoints newer than " + step + " in " + mine.root(),
                () -> mine.removeNewerThan(step));
        if (!abandoned.isEmpty()) {
            LOG.warn("rank {}: deleted checkpoints {}, which not every rank has", comm.rank(), abandoned);
        }
        byte[] rep = null;
        if (m.files().get(0).containsKey(RankDirectory.REPLICATED)) {
            rep = Agreement.agree(comm, "reading the replicated part of checkpoint " + step,
                    () -> comm.rank() == 0 ? Files.readAllBytes(here.resolve(RankDirectory.REPLICATED)) : null);
            rep = comm.bcastObj(rep, 0);
        }
        byte[] replicatedBytes = rep;
        return Agreement.agree(comm, "loading checkpoint " + step + " from " + here, () -> {
            InputArchive own = ArchiveBytes.fromFile(here.resolve(RankDirectory.OWN));
            Tensor rng = new Tensor();
            own.read("rng", rng);
            torch.getDefaultCPUGenerator().set_state(rng);
            rng.close();
            ObjectNode values = ValueCodec.fromBytes(Files.readAllBytes(here.resolve(RankDirectory.VALUES)),
                    here.resolve(RankDirectory.VALUES).toString());
            return new CheckpointReader(step, m, own, replicatedBytes == null ? null : ArchiveBytes.fromBytes(replicatedBytes), values);
        });
    }

    /** What the last {@link #restore} chose, and why, in one sentence. */
    public String note() {
        return note;
    }

    /**
     * For a job that starts from the beginning: throws on every rank if some rank's folder holds
     * checkpoints already (a new run's would be deleted as older than those, or mixed with them).
     */
    public void requireNoCheckpoints() {
        List<Long> steps = Agreement.agree(comm, "looking for checkpoints in " + mine.root(), mine::committedSteps);
        Agreement.noProblems(comm, "starting a new run in " + dir, steps.isEmpty() ? null
                : "rank " + comm.rank() + " has checkpoints " + steps + " in " + mine.root()
                        + ": resume from them, or give another checkpoint directory");
    }

    /** The committed checkpoints in this rank's folder, after removing what interrupted writes left. */
    private List<ResumeChoice.Found> scan() throws IOException {
        mine.removeUnfinished();
        List<ResumeChoice.Found> found = new ArrayList<>();
        for (long step : mine.committedSteps()) {
            Path file = mine.committed(step).resolve(RankDirectory.MANIFEST);
            try {
                byte[] text = Files.readAllBytes(file);
                Manifest m = Manifest.fromJson(text);
                MessageDigest d = DurableFiles.sha256();
                d.update(text);
                found.add(new ResumeChoice.Found(step, DurableFiles.hex(d), m.ranks(), m.identityDifferences(identity), null));
            } catch (IOException e) {
                found.add(new ResumeChoice.Found(step, null, 0, List.of(), file + ": " + e.getMessage()));
            }
        }
        return found;
    }

    /** Checks this rank's files of a checkpoint against the manifest's sizes and digests. */
    private Manifest verify(Path here) throws IOException {
        Manifest m = Manifest.fromJson(Files.readAllBytes(here.resolve(RankDirectory.MANIFEST)));
        for (Map.Entry<String, Manifest.FileEntry> e : m.files().get(comm.rank()).entrySet()) {
            Path f = here.resolve(e.getKey());
            if (!Files.exists(f)) {
                throw new IOException("missing file " + f);
            }
            long size = Files.size(f);
            String sha = DurableFiles.sha256(f);
            if (size != e.getValue().bytes() || !sha.equals(e.getValue().sha256())) {
                throw new IOException(f + " is corrupt or truncated: " + size + " bytes with SHA-256 " + sha + ", the manifest says "
                        + e.getValue().bytes() + " bytes with SHA-256 " + e.getValue().sha256()
                        + " (delete " + here + " on every rank to resume from an older checkpoint)");
            }
        }
        return m;
    }
}
