package io.mn4j.tensor;

import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;

/**
 * Ownership of native handles across JavaCPP's {@link PointerScope}s: taking a handle out of the
 * scope it was made in, so that an object can own it, or so that a method's result follows its
 * caller's scope while the method's temporaries go with its own. Tensors live outside the Java
 * heap, so mn4j releases them deterministically with scopes and {@code close()}, not the GC.
 */
public final class Scopes {
    private Scopes() {
    }

    /**
     * A new handle on the same tensor (no data copy) that belongs to no {@link PointerScope}: it lives
     * until {@code close()} is called on it (or it is garbage collected). Used by objects that own
     * tensors beyond the scope they were created in.
     */
    public static Tensor own(Tensor t) {
        if (t == null) {
            return null;
        }
        return unscoped(new Tensor(t));
    }

    /**
     * Takes a just-created pointer out of the innermost {@link PointerScope} (if it was attached to
     * it), so that only {@code close()} or the garbage collector release it.
     */
    public static <T extends Pointer> T unscoped(T p) {
        PointerScope inner = PointerScope.getInnerScope();
        if (inner != null && attaches(inner, p)) {
            // detach() releases one reference and would free a pointer held by nothing else.
            p.retainReference();
            inner.detach(p);
        }
        return p;
    }

    /** Whether {@code s} takes pointers of {@code p}'s class (a scope may be limited to some classes). */
    public static boolean attaches(PointerScope s, Pointer p) {
        Class<? extends Pointer>[] fc = s.forClasses();
        if (fc == null || fc.length == 0) {
            return true;
        }
        for (Class<? extends Pointer> c : fc) {
            if (c.isInstance(p)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Moves {@code t} out of {@code inner} (a scope opened by the caller for its temporaries) into
     * {@code outer} (the scope that was innermost before, or null), so the result of a method follows
     * its caller's scope like any other tensor it creates.
     */
    public static <T extends Pointer> T escape(PointerScope inner, PointerScope outer, T t) {
        // detach() releases one reference: hold one more so the handle survives the move.
        t.retainReference();
        inner.detach(t);
        if (outer != null) {
            outer.attach(t);
            t.releaseReference();
        }
        return t;
    }

    /**
     * {@code p}, made to live as long as the JVM: a constant (a deleter, options) may be first made
     * inside a caller's PointerScope, whose close must not free it.
     */
    public static <P extends Pointer> P permanent(P p) {
        p.retainReference();
        return p;
    }

    /** Closes every non-null tensor handle given. */
    public static void closeAll(Tensor... ts) {
        for (Tensor t : ts) {
            if (t != null) {
                t.close();
            }
        }
    }
}
