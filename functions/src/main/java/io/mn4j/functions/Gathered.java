package io.mn4j.functions;

import java.util.List;
import org.bytedeco.pytorch.Tensor;

/**
 * What the differentiable {@link Functions#gather} returns on one rank: at the root, every rank's
 * tensor ({@link #values()}); on every other rank, only a delegate ({@link #delegate()}) whose
 * backward sends the gradient of this rank's part home. The two cannot be mistaken for each other:
 * each accessor throws on the ranks where the other one applies.
 */
public final class Gathered {
    private final int rank;
    private final int root;
    private final List<Tensor> values;
    private final Tensor delegate;

    private Gathered(int rank, int root, List<Tensor> values, Tensor delegate) {
        this.rank = rank;
        this.root = root;
        this.values = values;
        this.delegate = delegate;
    }

    static Gathered atRoot(int root, List<Tensor> values) {
        return new Gathered(root, root, List.copyOf(values), null);
    }

    static Gathered elsewhere(int rank, int root, Tensor delegate) {
        return new Gathered(rank, root, null, delegate);
    }

    /** Whether this rank is the root, which holds the values. */
    public boolean atRoot() {
        return values != null;
    }

    /**
     * Every rank's tensor, in rank order (the root's own shares its {@code x}'s memory).
     *
     * @throws IllegalStateException on a rank other than the root, which holds only the delegate
     */
    public List<Tensor> values() {
        if (values == null) {
            throw new IllegalStateException("gather at root " + root + ": rank " + rank + " holds no values, only the delegate;"
                    + " call delegate().backward() (or chain it) so that its part's gradient comes back");
        }
        return values;
    }

    /**
     * The delegate of a rank other than the root: a 0-dim tensor to call {@code backward()} on or to
     * chain ({@code pseudoConnect}); it receives this rank's gradient from the root. A rank whose
     * {@code x} is not floating point gets a 0-dim tensor that needs no backward.
     *
     * @throws IllegalStateException at the root, whose backward starts from the values
     */
    public Tensor delegate() {
        if (delegate == null) {
            throw new IllegalStateException("gather at root " + root + ": the root holds the values, not a delegate;"
                    + " its backward starts from a loss computed on values()");
        }
        return delegate;
    }
}
