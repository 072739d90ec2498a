package io.mn4j.gnn.partition;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;

/**
 * The contents of a partition directory's {@code metadata.json}.
 *
 * <p>Serializable, so that a job can send it to its ranks ({@link PartitionScatter}).
 *
 * <p>Partition {@code k} owns the nodes with new (global) ids {@code [partNodeOffsets[k],
 * partNodeOffsets[k+1])}; {@code partEdgeCounts[k]} is the number of in-edges of those nodes.
 *
 * @param formatVersion version of the directory layout ({@link #FORMAT_VERSION} when written by this build)
 * @param numParts number of partitions
 * @param numNodes nodes of the whole graph
 * @param numEdges directed edges of the whole graph
 * @param featureSize feature dimension (0 without features)
 * @param featureType {@code float32} or {@code float64}, or {@code none}
 * @param numClasses number of classes (0 without labels)
 * @param hasLabels whether {@code labels.npy} exists in every part
 * @param hasMasks whether the three mask files exist in every part
 * @param weighted whether {@code edge_weight.npy} exists in every part
 * @param method partitioner name
 * @param seed partitioner seed
 * @param edgeCut directed edges between partitions
 * @param commVolume total boundary rows over all partition pairs (see {@link PartitionStats})
 * @param partNodeCounts nodes per partition
 * @param partEdgeCounts in-edges per partition
 * @param partNodeOffsets first new id of each partition, plus {@code numNodes} at the end
 */
public record PartitionMetadata(int formatVersion, int numParts, long numNodes, long numEdges, long featureSize, String featureType,
        int numClasses, boolean hasLabels, boolean hasMasks, boolean weighted, String method, long seed, long edgeCut, long commVolume,
        long[] partNodeCounts, long[] partEdgeCounts, long[] partNodeOffsets) implements Serializable {

    /** Value of the {@code format} field. */
    public static final String FORMAT = "mn4j-partitions";
    /** The layout version this build writes and reads. */
    public static final int FORMAT_VERSION = 1;
    /** File name of the metadata inside a partition directory. */
    public static final String FILE = "metadata.json";

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    /** Nodes owned by partition {@code k}. */
    public long nodes(int k) { return partNodeCounts[k]; }

    /** In-edges of partition {@code k}. */
    public long edges(int k) { return partEdgeCounts[k]; }

    /** First new id owned by partition {@code k}. */
    public long offset(int k) { return partNodeOffsets[k]; }

    /** The partition owning new id {@code v}. */
    public int owner(long v) {
        return owner(partNodeOffsets, v);
    }

    /**
     * The partition owning node {@code v} of a graph cut into contiguous ranges: partition k owns
     * {@code [offsets[k], offsets[k+1])}, the last entry is the number of nodes. Empty partitions
     * own nothing.
     */
    public static int owner(long[] offsets, long v) {
        long n = offsets[offsets.length - 1];
        if (v < 0 || v >= n) throw new IllegalArgumentException("node id " + v + " outside [0," + n + ")");
        int i = Arrays.binarySearch(offsets, v);
        if (i >= 0) {
            while (i + 1 < offsets.length && offsets[i + 1] == v) i++; // skip empty partitions
            return i;
        }
        return -i - 2;
    }

    /**
     * Writes {@code dir/metadata.json}, replacing it atomically: ranks of one node may write the
     * same metadata into the same directory at once, and a reader never sees half a file.
     */
    public void write(Path dir) throws IOException {
        ObjectNode o = JSON.createObjectNode();
        o.put("format", FORMAT);
        o.put("formatVersion", formatVersion);
        o.put("numParts", numParts);
        o.put("numNodes", numNodes);
        o.put("numEdges", numEdges);
        o.put("featureSize", featureSize);
        o.put("featureType", featureType);
        o.put("numClasses", numClasses);
        o.put("hasLabels", hasLabels);
        o.put("hasMasks", hasMasks);
        o.put("weighted", weighted);
        o.put("method", method);
        o.put("seed", seed);
        o.put("edgeCut", edgeCut);
        o.put("commVolume", commVolume);
        putArray(o, "partNodeCounts", partNodeCounts);
        putArray(o, "partEdgeCounts", partEdgeCounts);
        putArray(o, "partNodeOffsets", partNodeOffsets);
        Path tmp = Files.createTempFile(dir, FILE, ".tmp");
        try {
            Files.write(tmp, JSON.writeValueAsBytes(o));
            Files.move(tmp, dir.resolve(FILE), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /**
     * Reads and checks {@code dir/metadata.json}: format name and version, field types, and that
     * the per-partition arrays agree with each other and with the totals.
     */
    public static PartitionMetadata read(Path dir) throws IOException {
        Path f = dir.resolve(FILE);
        if (!Files.isDirectory(dir)) throw new PartitionFormatException("partition directory " + dir + " does not exist");
        if (!Files.exists(f)) throw new PartitionFormatException("missing " + f + " (not a partition directory, or an interrupted write)");
        JsonNode o;
        try {
            o = JSON.readTree(Files.readAllBytes(f));
        } catch (NoSuchFileException e) {
            throw new PartitionFormatException("missing " + f);
        } catch (JsonProcessingException e) {
            throw new PartitionFormatException(f + ": not valid JSON: " + e.getOriginalMessage());
        }
        if (o == null || !o.isObject()) throw new PartitionFormatException(f + ": not a JSON object");
        String format = text(o, f, "format");
        if (!FORMAT.equals(format)) throw new PartitionFormatException(f + ": format is '" + format + "', expected '" + FORMAT + "'");
        int version = (int) num(o, f, "formatVersion");
        if (version != FORMAT_VERSION) {
            throw new PartitionFormatException(f + ": partition format version " + version + " is not supported (this build reads version "
                    + FORMAT_VERSION + "); re-partition the graph with this version");
        }
        PartitionMetadata m = new PartitionMetadata(version, (int) num(o, f, "numParts"), num(o, f, "numNodes"), num(o, f, "numEdges"),
                num(o, f, "featureSize"), text(o, f, "featureType"), (int) num(o, f, "numClasses"), bool(o, f, "hasLabels"),
                bool(o, f, "hasMasks"), bool(o, f, "weighted"), text(o, f, "method"), num(o, f, "seed"), num(o, f, "edgeCut"),
                num(o, f, "commVolume"), array(o, f, "partNodeCounts"), array(o, f, "partEdgeCounts"), array(o, f, "partNodeOffsets"));
        m.check(f);
        return m;
    }

    private void check(Path f) throws PartitionFormatException {
        if (numParts < 1) throw new PartitionFormatException(f + ": numParts=" + numParts + " must be >= 1");
        if (partNodeCounts.length != numParts || partEdgeCounts.length != numParts || partNodeOffsets.length != numParts + 1) {
            throw new PartitionFormatException(f + ": per-partition arrays must have " + numParts + " entries (offsets " + (numParts + 1) + "), got "
                    + partNodeCounts.length + "/" + partEdgeCounts.length + "/" + partNodeOffsets.length);
        }
        long nodes = 0, edges = 0;
        for (int k = 0; k < numParts; k++) {
            if (partNodeOffsets[k] != nodes) throw new PartitionFormatException(f + ": partNodeOffsets[" + k + "]=" + partNodeOffsets[k] + ", expected " + nodes);
            if (partNodeCounts[k] < 0 || partEdgeCounts[k] < 0) throw new PartitionFormatException(f + ": negative count for partition " + k);
            nodes += partNodeCounts[k];
            edges += partEdgeCounts[k];
        }
        if (nodes != numNodes || partNodeOffsets[numParts] != numNodes) {
            throw new PartitionFormatException(f + ": partitions hold " + nodes + " nodes but numNodes=" + numNodes);
        }
        if (edges != numEdges) throw new PartitionFormatException(f + ": partitions hold " + edges + " edges but numEdges=" + numEdges);
        if (featureSize < 0) throw new PartitionFormatException(f + ": negative featureSize");
        if (featureSize > 0 && !featureType.equals("float32") && !featureType.equals("float64")) {
            throw new PartitionFormatException(f + ": featureType must be float32 or float64, got '" + featureType + "'");
        }
    }

    private static void putArray(ObjectNode o, String name, long[] a) {
        ArrayNode arr = o.putArray(name);
        for (long x : a) arr.add(x);
    }

    private static JsonNode field(JsonNode o, Path f, String name) throws PartitionFormatException {
        JsonNode v = o.get(name);
        if (v == null || v.isNull()) throw new PartitionFormatException(f + ": missing field '" + name + "'");
        return v;
    }

    private static String text(JsonNode o, Path f, String name) throws PartitionFormatException {
        JsonNode v = field(o, f, name);
        if (!v.isTextual()) throw new PartitionFormatException(f + ": field '" + name + "' must be a string, got " + v);
        return v.asText();
    }

    private static long num(JsonNode o, Path f, String name) throws PartitionFormatException {
        JsonNode v = field(o, f, name);
        if (!v.isIntegralNumber()) throw new PartitionFormatException(f + ": field '" + name + "' must be an integer, got " + v);
        return v.asLong();
    }

    private static boolean bool(JsonNode o, Path f, String name) throws PartitionFormatException {
        JsonNode v = field(o, f, name);
        if (!v.isBoolean()) throw new PartitionFormatException(f + ": field '" + name + "' must be true or false, got " + v);
        return v.asBoolean();
    }

    private static long[] array(JsonNode o, Path f, String name) throws PartitionFormatException {
        JsonNode v = field(o, f, name);
        if (!v.isArray()) throw new PartitionFormatException(f + ": field '" + name + "' must be an array");
        long[] a = new long[v.size()];
        for (int i = 0; i < a.length; i++) {
            if (!v.get(i).isIntegralNumber()) throw new PartitionFormatException(f + ": " + name + "[" + i + "] must be an integer");
            a[i] = v.get(i).asLong();
        }
        return a;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof PartitionMetadata m && m.formatVersion == formatVersion && m.numParts == numParts && m.numNodes == numNodes
                && m.numEdges == numEdges && m.featureSize == featureSize && m.featureType.equals(featureType) && m.numClasses == numClasses
                && m.hasLabels == hasLabels && m.hasMasks == hasMasks && m.weighted == weighted && m.method.equals(method) && m.seed == seed
                && m.edgeCut == edgeCut && m.commVolume == commVolume && Arrays.equals(m.partNodeCounts, partNodeCounts)
                && Arrays.equals(m.partEdgeCounts, partEdgeCounts) && Arrays.equals(m.partNodeOffsets, partNodeOffsets);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(numNodes) * 31 + Arrays.hashCode(partNodeCounts);
    }

    @Override
    public String toString() {
        // Every field: ranks compare their metadata by this text (PartitionReader.load).
        return "PartitionMetadata[v" + formatVersion + ", parts=" + numParts + ", nodes=" + numNodes + ", edges=" + numEdges + ", features="
                + featureSize + " " + featureType + ", classes=" + numClasses + ", labels=" + hasLabels + ", masks=" + hasMasks
                + ", weighted=" + weighted + ", method=" + method + ", seed=" + seed + ", edgeCut=" + edgeCut + ", commVolume=" + commVolume
                + ", nodes/part=" + Arrays.toString(partNodeCounts) + ", edges/part=" + Arrays.toString(partEdgeCounts) + ", offsets="
                + Arrays.toString(partNodeOffsets) + "]";
    }
}
