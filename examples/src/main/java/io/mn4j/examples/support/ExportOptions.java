package io.mn4j.examples.support;

import io.mn4j.checkpoint.ModelExport;
import io.mn4j.communicator.Communicator;
import io.mn4j.iterators.Metrics;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Supplier;
import org.bytedeco.pytorch.Module;
import picocli.CommandLine.Option;

/** The model export and import options every training program shares (a picocli mixin). */
public final class ExportOptions {
    @Option(names = "--export", paramLabel = "FILE",
            description = "After training, write the model's parameters to FILE: .npz (numpy, named as PyTorch's state_dict) or .pt "
                    + "(LibTorch archive). May be given twice, once per format.")
    public List<Path> files = new ArrayList<>();

    @Option(names = "--export-per-rank",
            description = "Model parallel: every rank writes its own stage to FILE.rank-<r>.npz instead of rank 0 gathering them.")
    public boolean perRank;

    @Option(names = "--init-from", paramLabel = "FILE",
            description = "Start from the parameters in FILE (.npz or .pt, as --export writes them) and print their test accuracy.")
    public Path initFrom;

    @Option(names = "--evaluate-only", description = "With --init-from: evaluate the loaded model and stop, without training.")
    public boolean evaluateOnly;

    /**
     * Checks the values (a bad one is a usage error, on every rank before MPI starts).
     *
     * @param stagesPerRank whether every rank holds its own part of the model (else --export-per-rank has no meaning)
     * @param resume whether the run resumes from a checkpoint (which then decides the parameters)
     */
    public void validate(boolean stagesPerRank, boolean resume) {
        for (Path f : files) {
            String name = f.getFileName().toString();
            if (!name.endsWith(".npz") && !name.endsWith(".pt")) {
                throw new IllegalArgumentException("--export " + f + ": the file must end in .npz or .pt");
            }
            Path parent = f.toAbsolutePath().getParent();
            if (!Files.isDirectory(parent)) {
                throw new IllegalArgumentException("--export " + f + ": the folder " + parent + " does not exist");
            }
        }
        if (perRank && !stagesPerRank) {
            throw new IllegalArgumentException("--export-per-rank: every rank holds the whole model here; rank 0 writes it");
        }
        if (evaluateOnly && initFrom == null) {
            throw new IllegalArgumentException("--evaluate-only needs --init-from");
        }
        if (initFrom != null && resume) {
            throw new IllegalArgumentException("--init-from and --resume both choose the parameters: give one");
        }
    }

    /**
     * With --init-from, loads the file into {@code model} and has rank 0 print what {@code evaluation}
     * says of it; returns whether the program should stop there (--evaluate-only). Collective.
     *
     * @param talk where rank 0 prints (null on other ranks)
     */
    public boolean initialize(Communicator comm, Module model, Supplier<String> evaluation, PrintStream talk) {
        if (initFrom == null) {
            return false;
        }
        ModelExport.load(comm, model, initFrom);
        String result = evaluation.get();
        if (talk != null) {
            talk.println("loaded " + initFrom + ": " + result);
            talk.flush();
        }
        return evaluateOnly;
    }

    /**
     * Writes the model to every --export file. Collective.
     *
     * @param layout how the model is spread over the ranks (--export-per-rank turns {@code GATHERED} into {@code PER_RANK})
     * @param talk where rank 0 prints (null on other ranks)
     */
    public void export(Communicator comm, Module model, ModelExport.Layout layout, PrintStream talk) {
        ModelExport.Layout how = perRank ? ModelExport.Layout.PER_RANK : layout;
        for (Path f : files) {
            ModelExport.save(comm, model, f, how);
            if (talk != null) {
                talk.println("model exported to " + (how == ModelExport.Layout.PER_RANK ? ModelExport.rankFile(f, 0) + " ... (one per rank)" : f));
            }
        }
    }

    /** The test metrics of the Fashion-MNIST programs as rank 0 prints them for --init-from. */
    public static String testResult(Metrics test) {
        return String.format(Locale.ROOT, "test accuracy %.2f%% (loss %.4f)", test.mean("accuracy") * 100, test.mean("loss"));
    }
}
