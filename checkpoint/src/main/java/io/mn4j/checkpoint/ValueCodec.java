package io.mn4j.checkpoint;

import com.fasterxml.jackson.annotation.JsonAutoDetect;
import com.fasterxml.jackson.annotation.PropertyAccessor;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * The JSON of a rank's saved values: records and plain classes by their fields (private ones
 * too, so that a class need not be written for Jackson), doubles exactly (shortest round-trip
 * text, NaN and infinities as strings).
 */
final class ValueCodec {
    private static final ObjectMapper JSON = new ObjectMapper()
            .setVisibility(PropertyAccessor.GETTER, JsonAutoDetect.Visibility.NONE)
            .setVisibility(PropertyAccessor.IS_GETTER, JsonAutoDetect.Visibility.NONE)
            .setVisibility(PropertyAccessor.SETTER, JsonAutoDetect.Visibility.NONE)
            .setVisibility(PropertyAccessor.FIELD, JsonAutoDetect.Visibility.ANY)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(SerializationFeature.INDENT_OUTPUT);

    private ValueCodec() {
    }

    static JsonNode toTree(Object value) {
        return JSON.valueToTree(value);
    }

    static <T> T fromTree(JsonNode node, Class<T> type) {
        try {
            return JSON.treeToValue(node, type);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("cannot read a saved " + type.getSimpleName() + ": " + e.getOriginalMessage(), e);
        }
    }

    static ObjectNode newObject() {
        return JSON.createObjectNode();
    }

    static byte[] toBytes(JsonNode node) {
        try {
            return JSON.writeValueAsBytes(node);
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }

    static ObjectNode fromBytes(byte[] json, String source) throws IOException {
        JsonNode n = JSON.readTree(json);
        if (!(n instanceof ObjectNode o)) {
            throw new IOException(source + " is not a JSON object");
        }
        return o;
    }
}
