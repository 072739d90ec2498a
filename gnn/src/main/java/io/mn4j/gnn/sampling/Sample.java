package io.mn4j.gnn.sampling;

import java.util.List;

/**
 * The sampled neighbourhood of one batch of seeds: one {@link Block} per layer, input layer
 * first. The input nodes, whose features the first layer reads, are the first block's sources;
 * the last block's destinations are the seeds. Closing it closes the blocks: do so after the
 * backward through the outputs computed on them.
 */
public final class Sample implements AutoCloseable {
    private final long[] seeds;
    private final List<Block> blocks;

    Sample(long[] seeds, List<Block> blocks) {
        this.seeds = seeds;
        this.blocks = List.copyOf(blocks);
    }

    /** The seeds (a copy), in the order the outputs' rows follow. */
    public long[] seeds() {
        return seeds.clone();
    }

    /** The blocks, input layer first. */
    public List<Block> blocks() {
        return blocks;
    }

    /** Global ids of the nodes whose features the first layer reads (a copy). */
    public long[] inputNodes() {
        return blocks.get(0).srcNodes();
    }

    @Override
    public void close() {
        blocks.forEach(Block::close);
    }
}
