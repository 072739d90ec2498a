/**
 * Checkpoints of multi-rank jobs that survive a lost rank and resume to the same curve
 * ({@link io.mn4j.checkpoint.Checkpointer}), in node-local directories.
 */
package io.mn4j.checkpoint;
