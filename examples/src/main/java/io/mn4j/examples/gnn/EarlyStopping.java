package io.mn4j.examples.gnn;

import io.mn4j.iterators.EpochStats;

/**
 * Early stopping as the GAT paper's code does it: training stops once for {@code patience} epochs
 * neither the validation accuracy has reached its best nor the validation loss its lowest, and the
 * model kept is the last one that reached both at once. Every rank sees the same (all-reduced)
 * validation figures, so every rank decides alike.
 */
public final class EarlyStopping {
    private final int patience;
    private double bestAccuracy = Double.NEGATIVE_INFINITY;
    private double lowestLoss = Double.POSITIVE_INFINITY;
    private EpochStats kept;
    private int waited;

    /** @throws IllegalArgumentException if {@code patience} is below 1 */
    public EarlyStopping(int patience) {
        if (patience < 1) {
            throw new IllegalArgumentException("--patience must be at least 1, got " + patience);
        }
        this.patience = patience;
    }

    /**
     * Takes one epoch's figures.
     *
     * @return whether this epoch became the kept one
     * @throws IllegalArgumentException if the epoch has no validation accuracy or loss (no validation nodes)
     */
    public boolean observe(EpochStats s) {
        double accuracy = s.validationAccuracy();
        double loss = s.validationLoss();
        if (Double.isNaN(accuracy) || Double.isNaN(loss)) {
            throw new IllegalArgumentException("--patience needs validation nodes: epoch " + s.epoch() + " has no validation "
                    + (Double.isNaN(accuracy) ? "accuracy" : "loss"));
        }
        boolean accuracyBest = accuracy >= bestAccuracy;
        boolean lossLowest = loss <= lowestLoss;
        if (!accuracyBest && !lossLowest) {
            waited++;
            return false;
        }
        waited = 0;
        bestAccuracy = Math.max(bestAccuracy, accuracy);
        lowestLoss = Math.min(lowestLoss, loss);
        if (accuracyBest && lossLowest) {
            kept = s;
            return true;
        }
        return false;
    }

    /** Whether {@code patience} epochs in a row have improved neither figure. */
    public boolean shouldStop() {
        return waited >= patience;
    }

    /** The epoch whose model is kept, or null before the first epoch. */
    public EpochStats kept() {
        return kept;
    }

    /** The patience, in epochs. */
    public int patience() {
        return patience;
    }
}
