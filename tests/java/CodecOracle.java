// Differential oracle for kafkacore's generated codec (tests/protocol/test_java_differential.py).
//
// One long-lived JVM. Each stdin line is "<SchemaName>\t<version>\t<json>"; the
// program builds the message with Kafka's generated <Name>[Data]JsonConverter,
// serializes it with the message's own size()/write() and answers one line:
// "OK <hex bytes>" or "ERR <reason>".
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

public final class CodecOracle {
    private static final String PKG = "org.apache.kafka.common.message.";
    private static final Map<String, Method> READERS = new HashMap<>();
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private static Method reader(String name) throws ClassNotFoundException, NoSuchMethodException {
        Method m = READERS.get(name);
        if (m == null) {
            Class<?> conv;
            try {
                conv = Class.forName(PKG + name + "DataJsonConverter");
            } catch (ClassNotFoundException e) {
                // "data" schemas (ConsumerProtocolSubscription, ...) have no Data suffix.
                conv = Class.forName(PKG + name + "JsonConverter");
            }
            m = conv.getMethod("read", JsonNode.class, short.class);
            READERS.put(name, m);
        }
        return m;
    }

    private static String hex(byte[] bytes) {
        char[] out = new char[bytes.length * 2];
        for (int i = 0; i < bytes.length; i++) {
            out[2 * i] = HEX[(bytes[i] >> 4) & 0xf];
            out[2 * i + 1] = HEX[bytes[i] & 0xf];
        }
        return new String(out);
    }

    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.split("\t", 3);
            try {
                short version = Short.parseShort(parts[1]);
                JsonNode node = mapper.readTree(parts[2]);
                Message msg = (Message) reader(parts[0]).invoke(null, node, version);
                ObjectSerializationCache cache = new ObjectSerializationCache();
                ByteBuffer buf = ByteBuffer.allocate(msg.size(cache, version));
                msg.write(new ByteBufferAccessor(buf), cache, version);
                out.println("OK " + hex(buf.array()));
            } catch (Throwable t) {
                Throwable cause = t instanceof InvocationTargetException ? t.getCause() : t;
                out.println("ERR " + String.valueOf(cause).replace('\n', ' '));
            }
            out.flush();
        }
    }
}
