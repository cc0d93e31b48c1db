// A Java KafkaConsumer (kafka-clients 4.3.1) as one member of a mixed consumer
// group in tests/consumer/test_broker_mixed_groups.py. It prints one line per
// event on stdout and stops when a line arrives on stdin:
//   READY | ASSIGNED <generation> <p,p,...> | REVOKED <p,...> | LOST <p,...>
//   R <partition> <offset>  (every record handed out by poll)
//   COMMIT_FAILED <exception class> | CLOSED
// Arguments: bootstrap group topic protocol(classic|consumer) assignor.
// It commits synchronously after every poll that returned records.

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;

public class GroupMember {
    private static String parts(Collection<TopicPartition> tps) {
        String joined = tps.stream().map(tp -> Integer.toString(tp.partition())).sorted()
            .collect(Collectors.joining(","));
        return joined.isEmpty() ? "-" : joined;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], group = args[1], topic = args[2];
        String protocol = args[3], assignor = args[4];
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("group.protocol", protocol);
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "earliest");
        props.put("max.poll.records", "50");
        props.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        props.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        if (protocol.equals("classic")) {
            String cls = assignor.equals("range")
                ? "org.apache.kafka.clients.consumer.RangeAssignor"
                : "org.apache.kafka.clients.consumer.CooperativeStickyAssignor";
            props.put("partition.assignment.strategy", cls);
            props.put("session.timeout.ms", "30000");
            props.put("heartbeat.interval.ms", "1000");
        }
        final KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props);
        final StringBuilder out = new StringBuilder();
        consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                out.append("ASSIGNED ").append(consumer.groupMetadata().generationId())
                    .append(' ').append(parts(tps)).append('\n');
            }

            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                out.append("REVOKED ").append(parts(tps)).append('\n');
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> tps) {
                out.append("LOST ").append(parts(tps)).append('\n');
            }
        });
        System.out.println("READY");
        System.out.flush();
        while (System.in.available() == 0) {
            ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
            for (ConsumerRecord<byte[], byte[]> r : records) {
                out.append("R ").append(r.partition()).append(' ').append(r.offset()).append('\n');
            }
            if (!records.isEmpty()) {
                try {
                    consumer.commitSync();
                } catch (KafkaException e) {
                    out.append("COMMIT_FAILED ").append(e.getClass().getSimpleName()).append('\n');
                }
            }
            if (out.length() > 0) {
                System.out.print(out);
                System.out.flush();
                out.setLength(0);
            }
        }
        consumer.close();
        System.out.print(out);
        System.out.println("CLOSED");
        System.out.flush();
    }
}
