package io.mn4j.communicator;

import org.bytedeco.javacpp.Loader;
import org.bytedeco.pytorch.global.torch;

/**
 * {@code java -cp ... io.mn4j.communicator.LoadNativeLibraries}: unpacks and loads LibTorch's
 * native libraries once. Launchers run it before {@code mpirun}, because JavaCPP's cache is
 * corrupted when several processes unpack it at the same time (a program that touches LibTorch
 * before {@link Communicator#world()} would race; world() itself orders the ranks of a node).
 */
public final class LoadNativeLibraries {
    private LoadNativeLibraries() {
    }

    public static void main(String[] args) {
        Loader.load(torch.class);
    }
}
