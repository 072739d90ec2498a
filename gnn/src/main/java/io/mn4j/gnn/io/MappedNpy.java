package io.mn4j.gnn.io;

import io.mn4j.tensor.Tensors;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.bytedeco.pytorch.BoolOptional;
import org.bytedeco.pytorch.LongOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * A {@code .npy} file as a tensor over a private, read-only memory map of it (LibTorch's
 * {@code from_file}): nothing is read up front, the pages of the rows an operation touches are
 * read on demand, and they stay clean file pages that the kernel may drop again under memory
 * pressure, so a file larger than memory can serve its rows. Such pages are not what JavaCPP's
 * {@code maxPhysicalBytes} limits: it counts resident memory minus shared and file-backed pages
 * ({@code /proc/self/statm}: resident − shared), i.e. the process's own allocations.
 *
 * <p>The map lives as long as the returned tensor and every view of it; closing them unmaps the
 * file. Writing into the tensor changes a private copy, never the file. The file must not be
 * truncated while mapped (reading a page beyond its new end kills the process with SIGBUS), so map
 * only files nothing rewrites meanwhile.
 */
public final class MappedNpy {
    private MappedNpy() {
    }

    /**
     * Maps {@code file}.
     *
     * @throws NpyFormatException for what {@link Npy#read(Path)} refuses too (a bad header, an
     *     unsupported type, missing or extra data bytes)
     */
    public static Tensor map(Path file) throws IOException {
        NpyHeader h = Npy.readHeader(file);
        long size = Files.size(file);
        long expected = h.headerBytes() + h.dataBytes();
        if (size != expected) {
            throw new NpyFormatException(file + ": " + (size < expected ? "truncated" : (size - expected) + " unexpected bytes after the data")
                    + ": header says " + h + " (" + h.dataBytes() + " data bytes) but the file has " + (size - h.headerBytes()));
        }
        if (h.dataBytes() == 0) {
            return Tensors.empty(h.type(), h.shape());
        }
        if (h.headerBytes() % h.itemSize() != 0) {
            throw new NpyFormatException(file + ": data at byte " + h.headerBytes() + " is not aligned to its " + h.itemSize()
                    + "-byte elements (numpy pads headers to 64 bytes; rewrite the file with numpy.save)");
        }
        Tensor bytes = torch.from_file(file.toString(), new BoolOptional(false), new LongOptional(size), new TensorOptions(ScalarType.Byte));
        try (Tensor data = bytes.narrow(0, h.headerBytes(), h.dataBytes()); Tensor typed = data.view(h.type())) {
            return typed.view(h.shape());
        } finally {
            bytes.close();
        }
    }
}
