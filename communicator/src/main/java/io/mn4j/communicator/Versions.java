package io.mn4j.communicator;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/** The versions of mn4j, LibTorch (Bytedeco's presets) and Open MPI's Java bindings this build used. */
public final class Versions {
    private static final Properties BUILT = load();

    private Versions() {
    }

    /** mn4j's own version. */
    public static String mn4j() {
        return BUILT.getProperty("mn4j");
    }

    /** One line for {@code --version}: mn4j, LibTorch and Open MPI. */
    public static String describe() {
        String pytorch = BUILT.getProperty("pytorch");
        String libtorch = pytorch.contains("-") ? pytorch.substring(0, pytorch.indexOf('-')) : pytorch;
        return "mn4j " + mn4j() + " (LibTorch " + libtorch + " through Bytedeco's presets " + pytorch
                + ", Open MPI " + BUILT.getProperty("openmpi") + " Java bindings)";
    }

    private static Properties load() {
        Properties p = new Properties();
        try (InputStream in = Versions.class.getResourceAsStream("versions.properties")) {
            if (in == null) {
                throw new IllegalStateException("versions.properties is missing from mn4j-communicator's jar");
            }
            p.load(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return p;
    }
}
