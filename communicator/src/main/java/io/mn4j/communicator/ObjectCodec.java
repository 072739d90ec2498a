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
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/** Java objects as uint8 tensors (Java serialization), so objects ride the tensor paths. */
final class ObjectCodec {
    private ObjectCodec() {
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

    @SuppressWarnings("unchecked")
    static <T> T decode(Tensor t) {
        byte[] data = new byte[(int) t.nbytes()];
        ByteBuffer view = TensorBytes.slice(TensorBytes.wireReady(t), 0, data.length);
        view.get(data);
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(data))) {
            return (T) in.readObject();
        } catch (IOException | ClassNotFoundException e) {
            throw new CommunicationException("cannot deserialize a received object: " + e, e);
        }
    }

    static <T> List<T> decodeAll(List<Tensor> ts) {
        List<T> out = new ArrayList<>(ts.size());
        for (Tensor t : ts) {
            out.add(decode(t));
        }
        return out;
    }
}
