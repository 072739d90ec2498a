/**
 * Checkpoints of multi-rank jobs that survive a lost rank ({@link io.mn4j.checkpoint.Checkpointer}),
 * and models exported for use outside the JVM ({@link io.mn4j.checkpoint.ModelExport}).
 */
package io.mn4j.checkpoint;
