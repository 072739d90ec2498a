package io.mn4j.checkpoint;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.pytorch.ArchiveWriter;
import org.bytedeco.pytorch.InputArchive;
import org.bytedeco.pytorch.OutputArchive;

/**
 * LibTorch archives ({@code torch::save}'s zip format) as bytes: streamed into a file (forced to
 * the disk) and a SHA-256 at once, and read back from a file or from memory.
 */
final class ArchiveBytes {
    private ArchiveBytes() {
    }

    /** What streaming an archive gave: its size and SHA-256. */
    record Written(long bytes, String sha256) {
    }

    /** Writes {@code archive} into a new file {@code file} (forced to the disk); returns size and SHA-256. */
    static Written toFile(OutputArchive archive, Path file) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            Written w = stream(archive, ch);
            ch.force(true);
            return w;
        }
    }

    private static Written stream(OutputArchive archive, FileChannel ch) throws IOException {
        MessageDigest digest = DurableFiles.sha256();
        long[] total = {0};
        IOException[] failure = {null};
        ArchiveWriter writer = new ArchiveWriter() {
            @Override
            public long call(Pointer data, long size) {
                if (failure[0] != null) {
                    return 0;
                }
                try {
                    ByteBuffer b = new BytePointer(data).capacity(size).asByteBuffer();
                    digest.update(b.duplicate());
                    while (b.hasRemaining()) {
                        ch.write(b);
                    }
                    total[0] += size;
                    return size;
                } catch (IOException e) {
                    failure[0] = e;
                    return 0; // LibTorch then throws: fewer bytes written than asked
                }
            }
        };
        try {
            archive.save_to(writer);
        } catch (RuntimeException e) {
            if (failure[0] != null) {
                throw failure[0];
            }
            throw e;
        } finally {
            writer.close();
        }
        if (failure[0] != null) {
            throw failure[0];
        }
        return new Written(total[0], DurableFiles.hex(digest));
    }

    /** An archive read from a file. */
    static InputArchive fromFile(Path file) {
        InputArchive a = new InputArchive();
        a.load_from(file.toString());
        return a;
    }

    /** An archive read from bytes in memory (LibTorch copies what it keeps). */
    static InputArchive fromBytes(byte[] bytes) {
        InputArchive a = new InputArchive();
        try (BytePointer p = new BytePointer(bytes)) {
            a.load_from(p, bytes.length);
        }
        return a;
    }
}
