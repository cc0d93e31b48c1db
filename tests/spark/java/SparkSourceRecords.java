import java.nio.charset.StandardCharsets;
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Writes the Spark source tests' records with the Java producer: one topic per
 * codec ({prefix}-{codec}), records spread over the partitions, some null keys
 * and values, headers on most records, CreateTime timestamps one second apart.
 *
 * <p>Arguments: bootstrap servers, topic prefix, partitions, records per topic,
 * timestamp (ms) of the first record.
 */
public final class SparkSourceRecords {

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String prefix = args[1];
        int partitions = Integer.parseInt(args[2]);
        int count = Integer.parseInt(args[3]);
        long baseTimestamp = Long.parseLong(args[4]);
        for (String codec : new String[] {"none", "gzip", "snappy", "lz4", "zstd"}) {
            Properties props = new Properties();
            props.put("bootstrap.servers", bootstrap);
            props.put("compression.type", codec);
            props.put("linger.ms", "20");
            props.put("batch.size", "4096");
            props.put("acks", "all");
            try (KafkaProducer<byte[], byte[]> producer =
                    new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
                String topic = prefix + "-" + codec;
                for (int i = 0; i < count; i++) {
                    byte[] key = i % 7 == 0 ? null : ("key-" + i).getBytes(StandardCharsets.UTF_8);
                    byte[] value = i % 11 == 0 ? null
                            : (codec + " value " + i + " " + "x".repeat(i % 50)).getBytes(StandardCharsets.UTF_8);
                    RecordHeaders headers = new RecordHeaders();
                    if (i % 3 != 0) {
                        headers.add("h", ("v" + i).getBytes(StandardCharsets.UTF_8));
                        headers.add("empty", null);
                    }
                    producer.send(new ProducerRecord<>(
                            topic, i % partitions, baseTimestamp + i * 1000L, key, value, headers));
                }
                producer.flush();
            }
        }
    }
}
