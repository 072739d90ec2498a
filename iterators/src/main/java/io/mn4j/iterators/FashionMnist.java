package io.mn4j.iterators;

import io.mn4j.tensor.Tensors;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * Fashion-MNIST (Xiao, Rasul and Vollgraf, 2017): 28x28 grey images of clothes in 10 classes,
 * 60,000 for training and 10,000 for testing, as the four IDX files of the original distribution
 * ({@code train-images-idx3-ubyte}, {@code train-labels-idx1-ubyte}, {@code t10k-...}), plain or
 * gzipped. Debian's {@code dataset-fashion-mnist} package installs them under
 * {@value #DEFAULT_DIR}. The same files of the original MNIST load as well.
 */
public final class FashionMnist {
    /** Where Debian's {@code dataset-fashion-mnist} package puts the files. */
    public static final String DEFAULT_DIR = "/usr/share/datasets/fashion-mnist";
    /** Environment variable that overrides {@link #DEFAULT_DIR}. */
    public static final String DIR_ENV = "MN4J_FASHION_MNIST_DIR";
    /** Class names by label. */
    public static final List<String> CLASS_NAMES = List.of("T-shirt/top", "Trouser", "Pullover", "Dress",
            "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot");
    /** Pixels per image. */
    public static final int PIXELS = 28 * 28;
    /** Number of classes. */
    public static final int CLASSES = 10;

    private FashionMnist() {
    }

    /** The directory to read from: {@value #DIR_ENV} if set, else {@value #DEFAULT_DIR}. */
    public static Path defaultDir() {
        String env = System.getenv(DIR_ENV);
        return Path.of(env != null && !env.isBlank() ? env : DEFAULT_DIR);
    }

    /**
     * The training ({@code train}) or test split as two fields: images float32 {@code [N, 784]}
     * scaled to [0, 1], and labels int64 {@code [N]}.
     *
     * @throws DatasetException if a file is missing, truncated or inconsistent
     */
    public static TensorDataset load(Path dir, boolean train) {
        TensorDataset raw = loadRaw(dir, train);
        Tensor bytes = raw.field(0);
        Tensor flat = bytes.reshape(new long[] {raw.size(), PIXELS});
        Tensor images = flat.to(torch.ScalarType.Float);
        images.div_(new Scalar(255.0));
        Tensor labels = raw.field(1).to(torch.ScalarType.Long);
        // the uint8 copies are garbage now: free them at once rather than at some later GC
        flat.close();
        bytes.close();
        raw.field(1).close();
        return new TensorDataset(images, labels);
    }

    /** The split as stored: images uint8 {@code [N, 28, 28]}, labels uint8 {@code [N]}. */
    public static TensorDataset loadRaw(Path dir, boolean train) {
        String prefix = train ? "train" : "t10k";
        Path imagesFile = file(dir, prefix + "-images-idx3-ubyte");
        Path labelsFile = file(dir, prefix + "-labels-idx1-ubyte");
        Tensor images = IdxReader.read(imagesFile);
        Tensor labels = IdxReader.read(labelsFile);
        long[] is = Tensors.shape(images);
        long[] ls = Tensors.shape(labels);
        if (images.scalar_type().value != torch.ScalarType.Byte.value || is.length != 3 || is[1] != 28 || is[2] != 28) {
            throw new DatasetException(imagesFile + " should hold uint8 images [N, 28, 28], holds " + Batch.describe(images));
        }
        if (labels.scalar_type().value != torch.ScalarType.Byte.value || ls.length != 1) {
            throw new DatasetException(labelsFile + " should hold uint8 labels [N], holds " + Batch.describe(labels));
        }
        if (is[0] != ls[0]) {
            throw new DatasetException(imagesFile + " has " + is[0] + " images but " + labelsFile + " has "
                    + ls[0] + " labels");
        }
        if (ls[0] > 0) {
            long max = labels.max().item_long();
            if (max >= CLASSES) {
                throw new DatasetException(labelsFile + " holds label " + max + ", expected 0.." + (CLASSES - 1));
            }
        }
        return new TensorDataset(images, labels);
    }

    /**
     * Checks that {@code dir} holds both splits' IDX files (plain or .gz), before anything is read.
     *
     * @throws DatasetException naming the first missing file and what the directory holds
     */
    public static void requireFiles(Path dir) {
        for (String prefix : new String[] {"train", "t10k"}) {
            file(dir, prefix + "-images-idx3-ubyte");
            file(dir, prefix + "-labels-idx1-ubyte");
        }
    }

    /** {@code dir/base} or {@code dir/base.gz}, whichever exists. */
    static Path file(Path dir, String base) {
        for (String name : new String[] {base, base + ".gz"}) {
            Path p = dir.resolve(name);
            if (Files.isRegularFile(p)) {
                return p;
            }
        }
        String listing;
        if (!Files.isDirectory(dir)) {
            listing = "the directory does not exist";
        } else {
            try (Stream<Path> s = Files.list(dir)) {
                listing = "it holds: " + s.map(p -> p.getFileName().toString()).sorted()
                        .collect(Collectors.joining(", "));
            } catch (IOException e) {
                listing = "it cannot be listed: " + e.getMessage();
            }
        }
        throw new DatasetException("Fashion-MNIST file " + base + "[.gz] not found in " + dir + " (" + listing
                + "). Install Debian's dataset-fashion-mnist package, or point " + DIR_ENV
                + " (or the program's data option) at a directory with the IDX files.");
    }
}
