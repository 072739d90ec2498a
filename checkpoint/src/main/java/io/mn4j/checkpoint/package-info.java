/**
 * Checkpoints of multi-rank jobs that survive a lost rank and resume to the same curve
 * ({@link io.mn4j.checkpoint.Checkpointer}), in node-local directories; and trained models
 * exported for use outside the JVM ({@link io.mn4j.checkpoint.ModelExport}).
 */
package io.mn4j.checkpoint;
