// A broker-side KIP-714 client-telemetry plugin for kafkacore's tests: every
// PushTelemetry payload the broker accepts is written to a file, so that a
// test can decode it with an independent OTLP decoder.
//
// Configured on the broker with
//   metric.reporters=FileTelemetryReporter
//   kafkacore.telemetry.dir=/some/dir
// Each push becomes <dir>/<sequence>-<client instance id>-<terminating>.bin
// (written to a temporary name, then renamed, so a reader never sees half).

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetry;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.apache.kafka.server.telemetry.ClientTelemetryReceiver;

@SuppressWarnings("deprecation")
public class FileTelemetryReporter implements MetricsReporter, ClientTelemetry {
    private final AtomicLong sequence = new AtomicLong();
    private volatile Path dir;

    @Override
    public void configure(Map<String, ?> configs) {
        Object where = configs.get("kafkacore.telemetry.dir");
        if (where == null) {
            throw new IllegalArgumentException("FileTelemetryReporter: set kafkacore.telemetry.dir");
        }
        dir = Paths.get(where.toString());
    }

    @Override
    public void init(List<KafkaMetric> metrics) {}

    @Override
    public void metricChange(KafkaMetric metric) {}

    @Override
    public void metricRemoval(KafkaMetric metric) {}

    @Override
    public void close() {}

    @Override
    public ClientTelemetryReceiver clientReceiver() {
        return this::write;
    }

    private void write(AuthorizableRequestContext context, ClientTelemetryPayload payload) {
        ByteBuffer data = payload.data().duplicate();
        String name = String.format(
            "%06d-%s-%s", sequence.incrementAndGet(), payload.clientInstanceId(),
            payload.isTerminating() ? "terminating" : "push");
        try {
            Path tmp = dir.resolve(name + ".tmp");
            try (FileChannel out = FileChannel.open(
                    tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING)) {
                while (data.hasRemaining()) {
                    out.write(data);
                }
            }
            Files.move(tmp, dir.resolve(name + ".bin"), StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new RuntimeException("FileTelemetryReporter: cannot write " + name, e);
        }
    }
}
