package io.mn4j.functions;

import io.mn4j.communicator.Communicator;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;

/**
 * A model made of components that receive their inputs from other ranks and send their outputs
 * to other ranks, in the style of ChainerMN's {@code MultiNodeChainList}. Every rank builds its
 * own list; {@link #forward} runs the components in the order they were added, wired with
 * sendAll, recvAll and pseudoConnect so that one {@code backward()} on what it returns (the model
 * output, or on a rank whose components all send, the delegate) runs every component's backward
 * in reverse order. Components with parameters are registered as submodules, so
 * {@code parameters()} gives them to an optimizer.
 *
 * <p>Messages are tagged {@code tagBase + k} for the k-th message between the same two ranks in
 * one forward pass, so that both ends agree on every edge without coordination, as long as both
 * list their exchanges with each other in the same order (which ChainerMN requires as well).
 */
public class MultiNodeChainList extends Module {
    /**
     * Default first tag of the messages of a list. Gradient tags leave callers fewer tag bits
     * when MPI_TAG_UB is small: below 2^21 - 1 it is out of range; pass a smaller base then.
     */
    public static final int DEFAULT_TAG_BASE = 0x4000;

    /** A component: a function from its inputs to its results. */
    @FunctionalInterface
    public interface Component {
        List<Tensor> forward(List<Tensor> inputs);

        /** A component of one input and one result. */
        static Component of(Function<Tensor, Tensor> f) {
            return xs -> {
                if (xs.size() != 1) {
                    throw new IllegalArgumentException("component expects one input tensor, got " + xs.size());
                }
                return List.of(f.apply(xs.get(0)));
            };
        }
    }

    private record Entry(String name, Component component, int[] rankIn, int[] rankOut) {
    }

    private final Communicator comm;
    private final Tags tags;
    private final int tagBase;
    private final List<Entry> entries = new ArrayList<>();
    private final Set<String> names = new HashSet<>();

    /** A list over {@code comm} with tags from {@link #DEFAULT_TAG_BASE}. */
    public MultiNodeChainList(Communicator comm) {
        this(comm, DEFAULT_TAG_BASE);
    }

    /**
     * A list over {@code comm} whose messages use tags from {@code tagBase} on (pick distinct
     * ranges for lists that run interleaved on the same communicator).
     */
    public MultiNodeChainList(Communicator comm, int tagBase) {
        this.tags = CommState.of(comm).tags();
        tags.checkUserTag("MultiNodeChainList", tagBase);
        this.comm = comm;
        this.tagBase = tagBase;
    }

    /** {@code int[]} of ranks, for {@link #add}; {@code ranks()} with no argument is null (none). */
    public static int[] ranks(int... r) {
        return r.length == 0 ? null : r.clone();
    }

    /**
     * Adds a component.
     *
     * @param name unique within the list (also the submodule name of {@code module})
     * @param module the component's parameters (registered as a submodule), or null
     * @param component what the component computes
     * @param rankIn null (use the model's inputs) or the ranks to receive from: the component
     *     gets the concatenation of the received lists, in this order; this rank's own number
     *     means "what an earlier component of this list sent to this rank"
     * @param rankOut null (the result is the model's output; at most one component) or the ranks
     *     to send the result to; this rank's own number passes it to a later component of this list
     * @return this list
     */
    public MultiNodeChainList add(String name, Module module, Component component, int[] rankIn, int[] rankOut) {
        if (name == null || !names.add(name)) {
            throw new IllegalArgumentException("MultiNodeChainList: component name " + name + " is missing or used twice");
        }
        if (component == null) {
            throw new IllegalArgumentException("MultiNodeChainList: component " + name + " is null");
        }
        checkRanks(name, "rankIn", rankIn);
        checkRanks(name, "rankOut", rankOut);
        if (rankOut == null && entries.stream().anyMatch(e -> e.rankOut == null)) {
            throw new IllegalArgumentException("MultiNodeChainList: component " + name + " has rankOut null, but"
                    + " another component already produces the model output (at most one may)");
        }
        if (module != null) {
            register_module(name, module);
        }
        entries.add(new Entry(name, component, rankIn == null ? null : rankIn.clone(),
                rankOut == null ? null : rankOut.clone()));
        return this;
    }

    /** Number of components. */
    public int components() {
        return entries.size();
    }

    /**
     * Runs the components; returns the single model output or the delegate.
     *
     * @throws IllegalStateException if the output is not exactly one tensor (use {@link #forwardAll})
     */
    public Tensor forward(Tensor... inputs) {
        List<Tensor> out = forwardAll(Arrays.asList(inputs));
        if (out.size() != 1) {
            throw new IllegalStateException("MultiNodeChainList: the output has " + out.size()
                    + " tensors; use forwardAll");
        }
        return out.get(0);
    }

    /**
     * Runs the components on {@code inputs}; returns the model output (the result of the component
     * with rankOut null, connected to every later part of this rank's graph), or a list holding
     * the delegate variable if no component produces the output here.
     */
    public List<Tensor> forwardAll(List<Tensor> inputs) {
        ForwardPass pass = new ForwardPass();
        for (Entry e : entries) {
            List<Tensor> x = e.rankIn == null ? pass.runOnModelInputs(e, inputs) : pass.receiveAndRun(e);
            if (e.rankOut == null) {
                pass.keepAsOutput(x);
            } else {
                pass.sendOut(e, x);
            }
        }
        return pass.result();
    }

    /** The state of one {@link #forwardAll}: what is on its way, the delegate, the output. */
    private final class ForwardPass {
        private final Deque<List<Tensor>> toSelf = new ArrayDeque<>();
        private final Map<Integer, Integer> sentTo = new HashMap<>();
        private final Map<Integer, Integer> receivedFrom = new HashMap<>();
        private final Delegate delegate = new Delegate();
        private final int me = comm.rank();
        private List<Tensor> y;
        private boolean delegateIsOutput;

        /** A component that takes the model's inputs. */
        List<Tensor> runOnModelInputs(Entry e, List<Tensor> inputs) {
            delegateIsOutput = false;
            // The earlier components' backward must run after this one's: tie them to its
            // inputs, or, when those carry no gradient, to its results.
            if (Delegate.canTake(inputs)) {
                Tensor pending = delegate.get();
                List<Tensor> x = e.component.forward(delegate.tieInto(inputs));
                if (!Delegate.canTake(x)) {
                    // Results without a gradient (integers) do not lead backward to the inputs.
                    delegate.set(pending);
                }
                return x;
            }
            return delegate.tieInto(e.component.forward(inputs));
        }

        /** A component that takes what it receives from {@code rankIn}. */
        List<Tensor> receiveAndRun(Entry e) {
            delegateIsOutput = false;
            List<Tensor> xs = new ArrayList<>();
            Tensor lastReceived = null;
            for (int r : e.rankIn) {
                List<Tensor> got;
                if (r == me) {
                    got = toSelf.poll();
                    if (got == null) {
                        throw new IllegalStateException("MultiNodeChainList: component " + e.name + " receives"
                                + " from this rank (" + me + ") but no earlier component sent to it");
                    }
                    got = delegate.tieInto(got);
                } else {
                    int tag = tagBase + receivedFrom.merge(r, 1, Integer::sum) - 1;
                    tags.checkUserTag("MultiNodeChainList " + e.name, tag);
                    got = PointToPoint.recvAllOrLeaveDelegate(comm, r, tag, delegate.get());
                    delegate.takenBy(got);
                }
                xs.addAll(got);
                // Chain the next receive to this one, so their backwards run in reverse order.
                Tensor first = firstDifferentiable(got);
                if (first != null) {
                    delegate.set(first);
                    lastReceived = first;
                }
            }
            // The component's results lead backward to what it received; a delegate that no
            // received list could take is tied to the results instead.
            if (delegate.get() == lastReceived) {
                delegate.set(null);
            }
            return delegate.tieInto(e.component.forward(xs));
        }

        /** The result of the component with rankOut null: the model output. */
        void keepAsOutput(List<Tensor> x) {
            y = x;
            if (delegate.get() == null) {
                delegate.set(firstDifferentiable(y));
                delegateIsOutput = true;
            }
        }

        /** Sends a component's result to every rank of {@code rankOut} (this rank: a later component). */
        void sendOut(Entry e, List<Tensor> x) {
            for (int r : e.rankOut) {
                x = delegate.tieInto(x);
                if (r == me) {
                    toSelf.add(x);
                    Tensor first = firstDifferentiable(x);
                    if (first != null) {
                        delegate.set(first);
                    }
                } else {
                    int tag = tagBase + sentTo.merge(r, 1, Integer::sum) - 1;
                    tags.checkUserTag("MultiNodeChainList " + e.name, tag);
                    delegate.join(Functions.sendAll(x, comm, r, tag));
                }
            }
        }

        /** The model output tied to the pending delegate, or the delegate alone. */
        List<Tensor> result() {
            if (!toSelf.isEmpty()) {
                throw new IllegalStateException("MultiNodeChainList: " + toSelf.size() + " result(s) sent to this"
                        + " rank (" + me + ") were never received by a later component; check that rankIn and"
                        + " rankOut correspond");
            }
            Tensor d = delegate.get();
            if (y != null) {
                return delegateIsOutput || d == null ? y : Functions.pseudoConnect(d, y);
            }
            if (d == null) {
                throw new IllegalStateException("MultiNodeChainList: no component produced an output or sent anything");
            }
            return new ArrayList<>(List.of(d));
        }
    }

    /**
     * The delegate of {@link #forwardAll} (ChainerMN's delegate variable): what the backward of
     * the values built next must lead into, or null. A list without a floating-point tensor
     * (integer labels, say) cannot carry it: it waits for the next value that can.
     */
    private static final class Delegate {
        private Tensor tensor;

        Tensor get() {
            return tensor;
        }

        void set(Tensor t) {
            tensor = t;
        }

        /** Whether {@code values} can carry a delegate: one of them is floating point. */
        static boolean canTake(List<Tensor> values) {
            return values.stream().anyMatch(Gradients::differentiable);
        }

        /** {@code values} with the delegate tied in (then used up), or unchanged if they cannot take it. */
        List<Tensor> tieInto(List<Tensor> values) {
            if (tensor == null || !canTake(values)) {
                return values;
            }
            List<Tensor> out = Functions.pseudoConnect(tensor, values);
            tensor = null;
            return out;
        }

        /** After a receive that was handed the delegate: used up if the received list took it. */
        void takenBy(List<Tensor> received) {
            if (canTake(received)) {
                tensor = null;
            }
        }

        /** A send's delegate joins the pending one: backward of the result runs both. */
        void join(Tensor sent) {
            tensor = tensor == null ? sent : Functions.pseudoConnect(tensor, sent);
        }
    }

    private static Tensor firstDifferentiable(List<Tensor> ts) {
        for (Tensor t : ts) {
            if (Gradients.differentiable(t) && t.requires_grad()) {
                return t;
            }
        }
        return null;
    }

    private void checkRanks(String name, String what, int[] ranks) {
        if (ranks == null) {
            return;
        }
        if (ranks.length == 0) {
            throw new IllegalArgumentException("MultiNodeChainList: component " + name + " has an empty " + what
                    + "; use null for none");
        }
        for (int r : ranks) {
            if (r < 0 || r >= comm.size()) {
                throw new IllegalArgumentException("MultiNodeChainList: component " + name + " has " + what + " "
                        + Arrays.toString(ranks) + " with rank " + r + " outside [0, " + comm.size() + ")");
            }
        }
    }
}
