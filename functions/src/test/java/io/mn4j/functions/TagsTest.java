package io.mn4j.functions;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The gradient tag layout for the MPI_TAG_UB of several MPI libraries and networks. */
class TagsTest {
    private static final int OPEN_MPI_SHARED_MEMORY = Integer.MAX_VALUE;
    private static final int UCX = (1 << 23) - 1;
    private static final int MPI_MINIMUM = 32767;

    @Test
    void openMpisBoundKeepsTheLayoutItAlwaysHad() {
        Tags t = new Tags(OPEN_MPI_SHARED_MEMORY);
        assertEquals(65536, t.userLimit());
        assertEquals(16384, t.occurrences());
        for (int tag : new int[] {0, 1, 0x4000, 65535}) {
            for (int k : new int[] {0, 1, 16383, 16384, 40000}) {
                assertEquals(1 << 30 | tag << 14 | (k & 16383), t.gradient(tag, k), "tag " + tag + ", k " + k);
            }
        }
    }

    @Test
    void ucxBoundKeepsEveryGradientTagWithinIt() {
        Tags t = new Tags(UCX);
        assertEquals(65536, t.userLimit());
        assertEquals(64, t.occurrences());
        assertEquals(UCX, t.gradient(65535, 63), "the largest gradient tag is MPI_TAG_UB itself");
        assertEquals(1 << 22, t.gradient(0, 0), "gradient tags start above every caller tag");
        assertEquals(t.gradient(7, 5), t.gradient(7, 5 + 64), "occurrence numbers wrap at 64");
        assertTrue(t.gradient(7, 5) != t.gradient(7, 6) && t.gradient(7, 5) != t.gradient(8, 5));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> t.checkUserTag("send", 65536));
        assertTrue(e.getMessage().contains("[0, 65536)") && e.getMessage().contains("MPI_TAG_UB of this MPI is "
                + UCX), e.getMessage());
    }

    @Test
    void theStandardsMinimumBoundLeavesFewerCallerTags() {
        Tags t = new Tags(MPI_MINIMUM);
        assertEquals(256, t.userLimit());
        assertEquals(64, t.occurrences());
        assertEquals(MPI_MINIMUM, t.gradient(255, 63));
        t.checkUserTag("recv", 255);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> t.checkUserTag("recv", 256));
        assertTrue(e.getMessage().contains("[0, 256)") && e.getMessage().contains("32767")
                && e.getMessage().contains("8 bits"), e.getMessage());
    }

    @Test
    void collectiveGradientTagsLieBetweenCallerTagsAndGradientTags() {
        for (int bound : new int[] {OPEN_MPI_SHARED_MEMORY, UCX, MPI_MINIMUM}) {
            Tags t = new Tags(bound);
            int lowestGradient = t.gradient(0, 0);
            int span = lowestGradient - t.userLimit();
            assertEquals(t.userLimit(), t.collectiveGradient(0), "bound " + bound);
            assertEquals(lowestGradient - 1, t.collectiveGradient(span - 1), "bound " + bound);
            assertEquals(t.collectiveGradient(3), t.collectiveGradient(3 + span), "wraps, bound " + bound);
            assertTrue(t.collectiveGradient(Integer.MAX_VALUE) >= t.userLimit()
                    && t.collectiveGradient(Integer.MIN_VALUE) >= t.userLimit(), "an overflowed counter stays in range");
            assertTrue(span >= 16128, "bound " + bound + ": " + span + " collective tags");
        }
    }

    @Test
    void aBoundWithoutRoomForTheLayoutIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Tags(127));
        assertTrue(e.getMessage().contains("MPI_TAG_UB 127"), e.getMessage());
    }

    @Test
    void aLowerCeilingShortensTheOccurrencesAndKeepsTheCallerTags() {
        Tags t = new Tags(OPEN_MPI_SHARED_MEMORY, 8);
        assertEquals(65536, t.userLimit());
        assertEquals(256, t.occurrences());
        assertEquals(t.gradient(7, 5), t.gradient(7, 5 + 256), "occurrence numbers wrap at 256");
        assertEquals(1 << 30, t.gradient(0, 0), "the gradient bit stays where MPI_TAG_UB puts it");
        assertEquals(14, Tags.occurrenceBitsCap(null));
        assertEquals(8, Tags.occurrenceBitsCap(" 8"));
        for (String bad : new String[] {"5", "15", "eight"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Tags.occurrenceBitsCap(bad));
            assertTrue(e.getMessage().contains("mn4j.functions.occurrenceBits=" + bad)
                    && e.getMessage().contains("from 6 to 14"), e.getMessage());
        }
    }
}
