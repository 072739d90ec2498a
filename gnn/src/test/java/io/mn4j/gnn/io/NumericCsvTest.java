package io.mn4j.gnn.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The CSV tokenizer's numbers: its fast float path must give exactly what Float.parseFloat gives. */
class NumericCsvTest {
    @TempDir
    Path tmp;

    @Test
    void floatsAreExactlyParseFloats() throws Exception {
        Random r = new Random(5);
        List<String> texts = new ArrayList<>(List.of("0", "-0.0", "1e5", "1E-5", "+3.25", "16777216", "16777217", "0.1", "123456.7",
                "9.999999e-11", "3.4028235e38", "1.4e-45", "NaN", "nan", "7.", ".5", "-.25e+2", "0.000000000123456789", "5e10", "5e11"));
        for (int i = 0; i < 20000; i++) {
            float f = Float.intBitsToFloat(r.nextInt());
            if (Float.isNaN(f) || Float.isInfinite(f)) {
                continue;
            }
            texts.add(Float.toString(f));
            texts.add(String.format(Locale.ROOT, "%.6f", r.nextGaussian()));
            texts.add(String.format(Locale.ROOT, "%.7g", r.nextGaussian() * Math.pow(10, r.nextInt(12) - 6)));
            texts.add(String.format(Locale.ROOT, "%.3e", r.nextDouble()));
        }
        Path f = tmp.resolve("floats.csv");
        Files.writeString(f, String.join(",", texts) + "\n");
        try (NumericCsv csv = NumericCsv.open(f)) {
            assertTrue(csv.nextLine());
            for (String t : texts) {
                float want = Float.parseFloat(t.equalsIgnoreCase("nan") ? "NaN" : t);
                float got = csv.readFloat("value");
                assertEquals(Float.floatToIntBits(want), Float.floatToIntBits(got), t);
            }
            csv.endLine(texts.size());
            assertFalse(csv.nextLine());
        }
    }

    @Test
    void blankLinesAndCarriageReturnsAreSkippedLinesStillCount() throws Exception {
        Path f = tmp.resolve("lines.csv");
        Files.writeString(f, "1,2\r\n\n3,-4\r\n\r\nx,5\n");
        try (NumericCsv csv = NumericCsv.open(f)) {
            assertTrue(csv.nextLine());
            assertEquals(1, csv.readLong("a"));
            assertEquals(2, csv.readLong("b"));
            csv.endLine(2);
            assertTrue(csv.nextLine());
            assertEquals(3, csv.line());
            assertEquals(3, csv.readLong("a"));
            assertEquals(-4, csv.readLong("b"));
            csv.endLine(2);
            assertTrue(csv.nextLine());
            GraphFormatException e = Assertions.assertThrows(GraphFormatException.class, () -> csv.readLong("source"));
            assertTrue(e.getMessage().startsWith(f + ":5: column 1: source 'x' is not an integer"), e.getMessage());
        }
    }
}
