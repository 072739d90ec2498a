package io.mn4j.checkpoint;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What a checkpoint holds, written last into every rank's copy of it (the same text on every rank):
 * the format, the mn4j version that wrote it, the job size, the step, the job's identity (what a
 * resume must match: model, partitioning, ...), the names saved per kind, and every rank's files
 * with their sizes and SHA-256 digests.
 *
 * @param format     {@link #FORMAT}
 * @param mn4j       mn4j's version
 * @param ranks      the job size
 * @param step       the step (iteration or epoch) the checkpoint was taken after
 * @param identity   what a resuming job must match, by name
 * @param contents   names saved, by kind ({@code modules}, {@code optimizers}, {@code values}, each
 *                   prefixed {@code replicated:} when one copy serves every rank)
 * @param files      per rank, its files' sizes and digests by file name
 */
record Manifest(String format, String mn4j, int ranks, long step, TreeMap<String, String> identity,
        TreeMap<String, List<String>> contents, List<TreeMap<String, FileEntry>> files) implements Serializable {

    /** The format's name and version, first in every manifest. */
    static final String FORMAT = "mn4j-checkpoint-1";

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT)
            .enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS);

    /** One file of one rank's part. */
    record FileEntry(long bytes, String sha256) implements Serializable {
    }

    /** The manifest as JSON text (the same bytes for the same manifest). */
    byte[] toJson() {
        try {
            return JSON.writeValueAsBytes(this);
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Reads a manifest.
     *
     * @throws IOException naming what is wrong when the text is not a manifest of this format
     */
    static Manifest fromJson(byte[] json) throws IOException {
        Manifest m;
        try {
            m = JSON.readValue(json, Manifest.class);
        } catch (IOException e) {
            throw new IOException("not a checkpoint manifest: " + e.getMessage(), e);
        }
        if (!FORMAT.equals(m.format()) || m.files() == null || m.identity() == null || m.contents() == null) {
            throw new IOException("not a manifest of format " + FORMAT + " (format " + m.format() + ")");
        }
        if (m.files().size() != m.ranks()) {
            throw new IOException("the manifest lists the files of " + m.files().size() + " ranks for a job of " + m.ranks());
        }
        return m;
    }

    /** Identity entries that differ from {@code expected}, as "name: saved X, this job Y"; empty if none. */
    List<String> identityDifferences(Map<String, String> expected) {
        TreeMap<String, String> all = new TreeMap<>(identity);
        expected.forEach(all::putIfAbsent);
        return all.keySet().stream()
                .filter(k -> !String.valueOf(identity.get(k)).equals(String.valueOf(expected.get(k))))
                .map(k -> k + ": saved " + describe(identity.get(k)) + ", this job " + describe(expected.get(k)))
                .toList();
    }

    private static String describe(String v) {
        return v == null ? "none" : "'" + v + "'";
    }
}
