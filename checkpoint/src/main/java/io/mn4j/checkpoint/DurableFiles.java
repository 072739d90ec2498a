package io.mn4j.checkpoint;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.stream.Stream;

/**
 * Files that survive a crash at any instant: written to the side, forced to the disk, then renamed
 * into place (the rename is atomic on POSIX file systems), and the directory forced so that the
 * rename itself is durable. Also SHA-256 digests, which the manifests record.
 */
final class DurableFiles {
    private DurableFiles() {
    }

    /** A new SHA-256 digest. */
    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this JVM has no SHA-256", e);
        }
    }

    /** Lower-case hex of a finished digest. */
    static String hex(MessageDigest d) {
        return HexFormat.of().formatHex(d.digest());
    }

    /** SHA-256 of a whole file, in hex. */
    static String sha256(Path file) throws IOException {
        MessageDigest d = sha256();
        byte[] buf = new byte[1 << 16];
        try (InputStream in = Files.newInputStream(file)) {
            for (int n; (n = in.read(buf)) > 0;) {
                d.update(buf, 0, n);
            }
        }
        return hex(d);
    }

    /** Writes {@code bytes} to a new file and forces it to the disk; returns their SHA-256. */
    static String writeForced(Path file, byte[] bytes) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            while (b.hasRemaining()) {
                ch.write(b);
            }
            ch.force(true);
        }
        MessageDigest d = sha256();
        d.update(bytes);
        return hex(d);
    }

    /** Forces a directory's entries (new files, renames) to the disk. */
    static void forceDirectory(Path dir) throws IOException {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        }
    }

    /** Renames {@code from} to {@code to} atomically (never a half-renamed state) and forces the parent. */
    static void renameDurably(Path from, Path to) throws IOException {
        try {
            Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
        } catch (AtomicMoveNotSupportedException e) {
            throw new IOException("cannot rename " + from + " to " + to + " atomically on this file system", e);
        }
        forceDirectory(to.getParent());
    }

    /** Deletes a file or a directory tree; nothing if it is not there. */
    static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> all = Files.walk(p)) {
            for (Path q : all.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(q);
            }
        }
    }
}
