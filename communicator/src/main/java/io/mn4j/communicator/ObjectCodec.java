package io.mn4j.communicator;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/** Java objects as uint8 tensors (Java serialization), so objects ride the tensor paths. */
final class ObjectCodec {
    private ObjectCodec() {
    }

    /**
     * Runs a tensor operation on the serialized object. An object that cannot be serialized goes
     * in as null, which the operation announces to its peers as a tensor that cannot be sent, so
     * that they fail too rather than wait; this rank then throws the serialization error.
     */
    static <R> R withEncoded(Serializable obj, Function<Tensor, R> op) {
        Tensor encoded;
        try {
            encoded = encode(obj);
        } catch (CommunicationException unserializable) {
            try {
                op.apply(null);
            } catch (CommunicationException announced) {
                unserializable.addSuppressed(announced);
            }
            throw unserializable;
        }
        return op.apply(encoded);
    }

    static Tensor encode(Serializable obj) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(obj);
        } catch (IOException | RuntimeException e) {
            throw new CommunicationException("cannot serialize " + (obj == null ? "null" : obj.getClass().getName())
                    + ": " + e, e);
        }
        byte[] data = bytes.toByteArray();
        Tensor t = torch.empty(new long[] {data.length}, new TensorOptions(torch.ScalarType.Byte), null);
        TensorBytes.slice(t, 0, data.length).put(data);
        return t;
    }

    /** The object in {@code t}; {@code from} names the call and sender for errors. */
    @SuppressWarnings("unchecked")
    static <T> T decode(Tensor t, String from) {
        byte[] data = new byte[(int) t.nbytes()];
        ByteBuffer view = TensorBytes.slice(TensorBytes.wireReady(t), 0, data.length);
        view.get(data);
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(data))) {
            return (T) in.readObject();
        } catch (IOException | ClassNotFoundException e) {
            throw new CommunicationException(from + ": cannot deserialize the received object: " + e, e);
        }
    }

    /** The objects of every rank, in rank order; {@code op} names the call for errors. */
    static <T> List<T> decodeAll(List<Tensor> ts, String op) {
        List<T> out = new ArrayList<>(ts.size());
        for (int r = 0; r < ts.size(); r++) {
            out.add(decode(ts.get(r), op + " from rank " + r));
        }
        return out;
    }
}
