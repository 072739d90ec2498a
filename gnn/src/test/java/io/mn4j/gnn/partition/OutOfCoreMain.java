package io.mn4j.gnn.partition;

import io.mn4j.gnn.graph.Graph;
import java.nio.file.Path;

/**
 * Partitions an OGB folder into 4 parts by LDG and writes them, out of core ({@code ooc}) or in
 * memory ({@code mem}), for {@link OutOfCoreMemoryTest}'s JVM with a small heap.
 * Arguments: MODE FOLDER OUT TEMP.
 */
public final class OutOfCoreMain {
    private OutOfCoreMain() {
    }

    public static void main(String[] args) throws Exception {
        Path folder = Path.of(args[1]), out = Path.of(args[2]);
        LdgPartitioner ldg = new LdgPartitioner();
        if (args[0].equals("ooc")) {
            try (OutOfCoreGraph g = OutOfCoreGraph.open(folder, -1, 1, 4 << 20, Path.of(args[3]))) {
                g.write(out, g.partition(ldg, 4), 4, ldg.name());
            }
        } else {
            try (Graph g = OutOfCoreGraphTest.inMemory(folder)) {
                PartitionWriter.write(out, g, ldg.partition(g, 4, 1), 4, ldg.name(), 1);
            }
        }
        System.out.println("partitioned; resident " + (org.bytedeco.javacpp.Pointer.physicalBytes() >> 20) + " MiB at the end");
    }
}
