package io.mn4j.gnn.nn;

import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/** Parameter initialisation shared by the layers (as PyG's defaults). */
final class Init {
    private Init() {
    }

    /**
     * Registers a parameter and returns an owning handle to it. The reference that
     * {@code register_parameter} returns points into the module's parameter list and dangles
     * once more parameters are registered (the list grows): never keep it.
     */
    static Tensor parameter(Module module, String name, Tensor init) {
        return new Tensor(module.register_parameter(name, init));
    }

    /** Glorot (Xavier) uniform on a fan-in × fan-out matrix. */
    static Tensor glorot(long fanIn, long fanOut, long... shape) {
        double a = Math.sqrt(6.0 / (fanIn + fanOut));
        return torch.rand(shape).mul(new Scalar(2 * a)).sub(new Scalar(a));
    }
}
