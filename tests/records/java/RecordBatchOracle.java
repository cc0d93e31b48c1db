import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.CompressionType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;

/**
 * Builds record batches with kafka-clients' own MemoryRecordsBuilder, for the
 * records differential test (tests/records/test_java_oracle.py).
 *
 * stdin, one case per line:
 *   codec producerId producerEpoch baseSequence transactional leaderEpoch|rec;rec;...
 * where rec = timestamp,key,value,headers; key/value are hex or "-" for null;
 * headers = h/h/... with h = keyHex:valueHex (value "-" for null), or empty.
 * stdout: the built batch in hex, one line per case.
 */
public final class RecordBatchOracle {
    private static byte[] bytesOrNull(String field) {
        return field.equals("-") ? null : HexFormat.of().parseHex(field);
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) continue;
            String[] parts = line.split("\\|", -1);
            String[] head = parts[0].split(" ");
            Compression compression = Compression.of(CompressionType.forName(head[0])).build();
            ByteBuffer buffer = ByteBuffer.allocate(1 << 22);
            MemoryRecordsBuilder builder = MemoryRecords.builder(
                buffer, (byte) 2, compression, TimestampType.CREATE_TIME, 0L,
                -1L, Long.parseLong(head[1]), Short.parseShort(head[2]), Integer.parseInt(head[3]),
                Boolean.parseBoolean(head[4]), Integer.parseInt(head[5]));
            long offset = 0;
            for (String rec : parts[1].split(";", -1)) {
                String[] f = rec.split(",", -1);
                List<Header> headers = new ArrayList<>();
                if (!f[3].isEmpty()) {
                    for (String h : f[3].split("/", -1)) {
                        String[] kv = h.split(":", -1);
                        String key = new String(HexFormat.of().parseHex(kv[0]), StandardCharsets.UTF_8);
                        headers.add(new RecordHeader(key, bytesOrNull(kv[1])));
                    }
                }
                builder.appendWithOffset(offset++, Long.parseLong(f[0]), bytesOrNull(f[1]), bytesOrNull(f[2]),
                    headers.toArray(new Header[0]));
            }
            ByteBuffer built = builder.build().buffer();
            byte[] data = new byte[built.remaining()];
            built.get(data);
            out.append(HexFormat.of().formatHex(data)).append('\n');
        }
        System.out.print(out);
    }
}
