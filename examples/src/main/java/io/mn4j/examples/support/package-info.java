/**
 * What the training examples share: command-line options, the epoch loop with its progress bar,
 * resident-memory readings, the per-epoch CSV and PNG curves, and an MLP that can be cut into
 * per-rank stages.
 */
package io.mn4j.examples.support;
