package io.mn4j.mpitests.checkpoint;

import io.mn4j.checkpoint.CheckpointReader;
import io.mn4j.checkpoint.Checkpointer;
import io.mn4j.communicator.Communicator;
import io.mn4j.examples.support.Mlp;
import io.mn4j.mpitests.Check;
import io.mn4j.mpitests.Scenario;
import io.mn4j.mpitests.ScenarioSuite;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.bytedeco.pytorch.Adam;
import org.bytedeco.pytorch.AdamOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * The checkpoint library on 1 to 4 ranks: a restored model, Adam and generator continue exactly
 * as the saved ones; keep-last-K; what a rank killed in the middle of a save leaves behind (its
 * temporary folder, or a checkpoint the others committed and it did not) is passed over for the
 * newest checkpoint complete on every rank, saying so; and each bad input stops every rank with a
 * message naming it: a corrupt or truncated part, a checkpoint of another job size or identity,
 * replicas that have diverged.
 */
public class CheckpointSuite implements ScenarioSuite {
    private static final Map<String, String> ID = Map.of("model", "mlp 6-8-3");

    @Override
    public Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = new LinkedHashMap<>();
        s.put("a restored stage, Adam, replicated model and generator continue exactly", CheckpointSuite::roundTrip);
        s.put("only the newest K checkpoints are kept", CheckpointSuite::keepsNewest);
        s.put("an interrupted save leaves the previous checkpoint, used with a note", CheckpointSuite::interrupted);
        s.put("a corrupt part stops every rank, naming the file", (c, check) -> damaged(c, check, "own.pt", CheckpointSuite::flipByte));
        s.put("a truncated part stops every rank, naming the file", (c, check) -> damaged(c, check, "values.json", CheckpointSuite::truncate));
        s.put("a checkpoint of another job size stops every rank", CheckpointSuite::otherJobSize);
        s.put("a checkpoint of another identity stops every rank", CheckpointSuite::otherIdentity);
        s.put("diverged replicas stop every rank at the save", CheckpointSuite::divergedReplicas);
        s.put("no checkpoint: restore returns null, saying so", CheckpointSuite::nothing);
        return s;
    }

    /** A fresh directory, the same path on every rank (made by rank 0: the ranks share this host's /tmp). */
    private static Path newDir(Communicator c) throws IOException {
        String p = c.rank() == 0 ? Files.createTempDirectory("mn4j-ckpt-").toString() : null;
        return Path.of(c.bcastObj(p, 0));
    }

    /** A small MLP and Adam, trained {@code steps} steps on data drawn from {@code dataSeed}. */
    private record Net(Mlp.Stage model, Adam adam) {
        static Net of(long seed) {
            Mlp.Stage m = new Mlp(6, 8, 3).stage(0, 2, seed);
            return new Net(m, new Adam(m.parameters(), new AdamOptions(0.05)));
        }

        void train(int steps, long dataSeed) {
            for (int i = 0; i < steps; i++) {
                torch.manual_seed(dataSeed * 100 + i);
                Tensor x = torch.randn(5, 6);
                adam.zero_grad();
                model.forward(x).square().sum().backward();
                adam.step();
            }
        }

        Tensor flat() {
            var ps = model.parameters();
            Tensor[] all = new Tensor[(int) ps.size()];
            for (int i = 0; i < all.length; i++) {
                all[i] = ps.get(i).detach().flatten();
            }
            return torch.cat(new TensorVector(all));
        }
    }

    private static void roundTrip(Communicator c, Check check) throws IOException {
        Path dir = newDir(c);
        Checkpointer ckpt = new Checkpointer(c, dir, 2, ID);
        Net own = Net.of(10 + c.rank());
        own.train(3, 1000 + c.rank());
        Net rep = Net.of(7);
        rep.train(2, 7);
        ckpt.save(3, w -> w.module("stage", own.model()).optimizer("adam", own.adam()).value("counter", List.of(c.rank(), 42.5))
                .replicatedModule("shared", rep.model()).replicatedOptimizer("sharedAdam", rep.adam()));
        Tensor draw = torch.rand(4);
        own.train(2, 2000 + c.rank());
        rep.train(2, 8);
        Net own2 = Net.of(99);
        Net rep2 = Net.of(98);
        try (CheckpointReader r = ckpt.restore()) {
            check.equal("step restored", 3L, r.step());
            r.module("stage", own2.model());
            r.optimizer("adam", own2.adam());
            r.replicatedModule("shared", rep2.model());
            r.replicatedOptimizer("sharedAdam", rep2.adam());
            check.equal("value restored", List.of(c.rank(), 42.5), r.value("counter", List.class));
            check.throwsWith("an unknown name", () -> r.module("nope", own2.model()), "holds no module named 'nope'", "[stage, replicated:shared]");
        }
        check.equal("generator restored: the same draw", 0.0, draw.sub(torch.rand(4)).abs().max().item_double());
        own2.train(2, 2000 + c.rank());
        rep2.train(2, 8);
        check.equal("own stage continues bitwise (Adam's moments and steps restored)", 0.0,
                own.flat().sub(own2.flat()).abs().max().item_double());
        check.equal("replicated model continues bitwise", 0.0, rep.flat().sub(rep2.flat()).abs().max().item_double());
        check.isTrue("rank 0 alone keeps the replicated part", Files.exists(dir.resolve("rank-" + c.rank()).resolve("step-000000000003")
                .resolve("replicated.pt")) == (c.rank() == 0), "replicated.pt on rank " + c.rank());
    }

    private static void keepsNewest(Communicator c, Check check) throws IOException {
        Path dir = newDir(c);
        Checkpointer ckpt = new Checkpointer(c, dir, 2, ID);
        Net net = Net.of(1);
        for (long step = 1; step <= 4; step++) {
            ckpt.save(step * 10, w -> w.module("stage", net.model()));
        }
        check.equal("steps left", List.of("step-000000000030", "step-000000000040"), list(dir.resolve("rank-" + c.rank())));
    }

    private static void interrupted(Communicator c, Check check) throws IOException {
        Path dir = newDir(c);
        Checkpointer ckpt = new Checkpointer(c, dir, 3, ID);
        Net net = Net.of(1);
        ckpt.save(1, w -> w.module("stage", net.model()).value("step", 1));
        ckpt.save(2, w -> w.module("stage", net.model()).value("step", 2));
        ckpt.save(3, w -> w.module("stage", net.model()).value("step", 3));
        int last = c.size() - 1;
        Path mine = dir.resolve("rank-" + c.rank());
        if (c.rank() == last) {
            // killed after the others renamed step 3 into place, before its own rename; step 4 half written
            Files.move(mine.resolve("step-000000000003"), mine.resolve("step-000000000003.tmp"));
            Files.createDirectories(mine.resolve("step-000000000004.tmp"));
            Files.write(mine.resolve("step-000000000004.tmp").resolve("own.pt"), new byte[] {80, 75, 3});
        }
        c.barrier();
        try (CheckpointReader r = ckpt.restore()) {
            check.equal("the newest complete on every rank", 2L, r.step());
            check.equal("its values", 2, r.value("step", Integer.class));
        }
        if (c.size() > 1) {
            check.isTrue("the note says why", ckpt.note().contains("the newest complete on every rank (checkpoint 3 is missing on rank ["
                    + last + "])"), ckpt.note());
        }
        check.equal("unfinished and abandoned checkpoints removed", List.of("step-000000000001", "step-000000000002"), list(mine));
    }

    @FunctionalInterface
    private interface Damage {
        void apply(Path file) throws IOException;
    }

    private static void damaged(Communicator c, Check check, String file, Damage damage) throws IOException {
        Path dir = newDir(c);
        Checkpointer ckpt = new Checkpointer(c, dir, 2, ID);
        Net net = Net.of(1);
        ckpt.save(5, w -> w.module("stage", net.model()).value("step", 5));
        int last = c.size() - 1;
        Path bad = dir.resolve("rank-" + last).resolve("step-000000000005").resolve(file);
        if (c.rank() == last) {
            damage.apply(bad);
        }
        c.barrier();
        check.throwsWith("restore on rank " + c.rank(), ckpt::restore, "rank-" + last, bad.toString(), "corrupt or truncated",
                "the manifest says");
    }

    private static void flipByte(Path f) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
            raf.seek(raf.length() / 2);
            int b = raf.read();
            raf.seek(raf.length() / 2);
            raf.write(b ^ 0x40);
        }
    }

    private static void truncate(Path f) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
            raf.setLength(raf.length() - 3);
        }
    }

    private static void otherJobSize(Communicator c, Check check) throws IOException {
        if (c.size() < 2) {
            check.isTrue("needs 2 ranks or more", true, "");
            return;
        }
        Path dir = newDir(c);
        int last = c.size() - 1;
        try (Communicator sub = c.split(c.rank() < last ? 0 : 1, c.rank())) {
            if (c.rank() < last) {
                Net net = Net.of(1);
                new Checkpointer(sub, dir, 2, ID).save(1, w -> w.module("stage", net.model()));
            }
        }
        Checkpointer ckpt = new Checkpointer(c, dir, 2, ID);
        check.throwsWith("restore on rank " + c.rank(), ckpt::restore, "rank 0: checkpoint 1 in " + dir,
                "written by a job of " + last + " ranks, this job has " + c.size());
    }

    private static void otherIdentity(Communicator c, Check check) throws IOException {
        Path dir = newDir(c);
        Net net = Net.of(1);
        new Checkpointer(c, dir, 2, Map.of("model", "a", "partitions", "metis 4")).save(1, w -> w.module("stage", net.model()));
        Checkpointer other = new Checkpointer(c, dir, 2, Map.of("model", "b", "partitions", "metis 4"));
        check.throwsWith("restore on rank " + c.rank(), other::restore, "is of another run", "model: saved 'a', this job 'b'");
    }

    private static void divergedReplicas(Communicator c, Check check) throws IOException {
        if (c.size() < 2) {
            check.isTrue("needs 2 ranks or more", true, "");
            return;
        }
        Path dir = newDir(c);
        Net net = Net.of(c.rank() == c.size() - 1 ? 2 : 1);
        Checkpointer ckpt = new Checkpointer(c, dir, 2, ID);
        check.throwsWith("save on rank " + c.rank(), () -> ckpt.save(1, w -> w.replicatedModule("shared", net.model())),
                "rank " + (c.size() - 1) + "'s replicated state", "differs from rank 0's", "diverged");
        check.isTrue("nothing committed", !Files.exists(dir.resolve("rank-" + c.rank()).resolve("step-000000000001")), "step 1 exists");
    }

    private static void nothing(Communicator c, Check check) throws IOException {
        Path dir = newDir(c);
        Checkpointer ckpt = new Checkpointer(c, dir, 2, ID);
        check.isTrue("null", ckpt.restore() == null, "a checkpoint was found in an empty directory");
        check.isTrue("the note says so", ckpt.note().contains("no checkpoint in " + dir + ": starting from the beginning"), ckpt.note());
    }

    private static List<String> list(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }
}
