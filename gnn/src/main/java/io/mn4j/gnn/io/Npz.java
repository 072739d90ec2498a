package io.mn4j.gnn.io;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Enumeration;
import java.util.Map;
import java.util.TreeSet;
import java.util.zip.ZipEntry;
import java.util.zip.ZipException;
import java.util.zip.ZipFile;
import java.util.zip.ZipOutputStream;
import org.bytedeco.pytorch.Tensor;

/**
 * A numpy {@code .npz} archive: a zip file of {@code .npy} arrays (stored or deflated), read one
 * array at a time into LibTorch tensors.
 */
public final class Npz implements AutoCloseable {
    private final Path file;
    private final ZipFile zip;

    private Npz(Path file, ZipFile zip) {
        this.file = file;
        this.zip = zip;
    }

    /** Opens an archive. */
    public static Npz open(Path file) throws IOException {
        if (!Files.exists(file)) throw new NoSuchFileException(file.toString(), null, "missing .npz file");
        try {
            return new Npz(file, new ZipFile(file.toFile()));
        } catch (ZipException e) {
            throw new NpyFormatException(file + ": not a readable .npz (zip) archive: " + e.getMessage());
        }
    }

    /** The archive's path. */
    public Path file() {
        return file;
    }

    /** Names of the arrays (entry names without {@code .npy}), sorted. */
    public TreeSet<String> names() {
        TreeSet<String> names = new TreeSet<>();
        for (Enumeration<? extends ZipEntry> en = zip.entries(); en.hasMoreElements(); ) {
            String n = en.nextElement().getName();
            names.add(n.endsWith(".npy") ? n.substring(0, n.length() - 4) : n);
        }
        return names;
    }

    /** Whether the archive holds an array of this name. */
    public boolean contains(String name) {
        return entry(name) != null;
    }

    /**
     * Reads one array.
     *
     * @throws NpyFormatException if the array is missing or not a valid supported {@code .npy}
     */
    public Tensor read(String name) throws IOException {
        ZipEntry e = entry(name);
        if (e == null) throw new NpyFormatException(file + ": no array '" + name + "' (arrays: " + names() + ")");
        try (InputStream in = zip.getInputStream(e)) {
            return Npy.read(in, file + "!" + e.getName());
        } catch (ZipException ze) {
            throw new NpyFormatException(file + "!" + e.getName() + ": corrupt zip entry: " + ze.getMessage());
        }
    }

    /**
     * Writes arrays to a new {@code .npz} archive (entries {@code NAME.npy}).
     *
     * @param compress deflate the entries (like {@code numpy.savez_compressed}) or store them (like {@code numpy.savez})
     */
    public static void write(Path file, Map<String, Tensor> arrays, boolean compress) throws IOException {
        try (OutputStream os = new BufferedOutputStream(Files.newOutputStream(file), 1 << 20);
                ZipOutputStream zos = new ZipOutputStream(os)) {
            zos.setMethod(ZipOutputStream.DEFLATED);
            zos.setLevel(compress ? 6 : 0);
            for (Map.Entry<String, Tensor> a : arrays.entrySet()) {
                zos.putNextEntry(new ZipEntry(a.getKey() + ".npy"));
                Npy.write(zos, a.getValue());
                zos.closeEntry();
            }
        }
    }

    private ZipEntry entry(String name) {
        ZipEntry e = zip.getEntry(name + ".npy");
        return e != null ? e : zip.getEntry(name);
    }

    @Override
    public void close() throws IOException {
        zip.close();
    }
}
