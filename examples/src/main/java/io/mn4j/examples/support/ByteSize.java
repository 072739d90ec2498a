package io.mn4j.examples.support;

import java.util.Locale;
import picocli.CommandLine;

/** Reads a size in bytes for picocli: a number with an optional unit k, m or g (binary: 512m is 512 MiB). */
public final class ByteSize implements CommandLine.ITypeConverter<Long> {
    @Override
    public Long convert(String value) {
        return parse(value);
    }

    /** {@code 1048576}, {@code 64k}, {@code 512m}, {@code 2g} (any case, optional trailing b). */
    public static long parse(String value) {
        String s = value.trim().toLowerCase(Locale.ROOT);
        if (s.endsWith("b")) s = s.substring(0, s.length() - 1);
        int shift = 0;
        if (!s.isEmpty()) {
            switch (s.charAt(s.length() - 1)) {
                case 'k': shift = 10; break;
                case 'm': shift = 20; break;
                case 'g': shift = 30; break;
                default: break;
            }
        }
        String digits = shift == 0 ? s : s.substring(0, s.length() - 1);
        try {
            long n = Long.parseLong(digits);
            if (n < 0 || n > Long.MAX_VALUE >> shift) throw new NumberFormatException();
            return n << shift;
        } catch (NumberFormatException e) {
            throw new CommandLine.TypeConversionException("'" + value + "' is not a size (a number of bytes, or with k, m or g: 512m, 2g)");
        }
    }
}
