/**
 * Data sets and iterators for multi-node training, after ChainerMN's "datasets and iterators".
 *
 * <p>A {@link io.mn4j.iterators.Dataset} is a finite indexable collection whose examples are
 * batched into {@link io.mn4j.iterators.Batch}es of tensors ({@link io.mn4j.iterators.TensorDataset}
 * holds them as tensors already). A {@link io.mn4j.iterators.SerialIterator} walks it in mini-batches
 * with Chainer's epoch bookkeeping, optionally shuffled from a seed.
 *
 * <p>The three input patterns of model-parallel training each have their tool:
 * <ol>
 *   <li>each rank takes different mini-batches: {@link io.mn4j.iterators.Datasets#scatterDataset}
 *       (the root ships each rank its part) or {@link io.mn4j.iterators.Datasets#scatterIndices}
 *       (every rank reads the data itself; only indices travel);</li>
 *   <li>several ranks share the same mini-batches: {@link io.mn4j.iterators.MultiNodeIterator} (one
 *       rank reads and broadcasts each batch) or {@link io.mn4j.iterators.SynchronizedIterator} (each
 *       rank reads its own data in an order shuffled from one shared seed);</li>
 *   <li>model inputs come from other ranks: {@link io.mn4j.iterators.Datasets#createEmptyDataset},
 *       which keeps iteration counts and epochs in step without data.</li>
 * </ol>
 *
 * <p>Readers for real data: {@link io.mn4j.iterators.IdxReader} and
 * {@link io.mn4j.iterators.FashionMnist} (IDX files, gzipped or not), and
 * {@link io.mn4j.iterators.CsvReader} (numeric CSV). {@link io.mn4j.iterators.MultiNodeEvaluator}
 * combines metrics over ranks by sums and counts, so parts of unequal size weigh correctly.
 *
 * <p>Distributed operations are collective, and a bad input on one rank (batch size larger than
 * the data set, ranks that disagree on the data set length, a failing reader at the master) makes
 * every rank throw a {@link io.mn4j.iterators.DatasetException} rather than leaving some waiting.
 */
package io.mn4j.iterators;
