// Test-time oracle for kafkacore's murmur2 and keyed partitioning.
//
// Reads one hex-encoded key per line on stdin (an empty line is the empty
// key) and writes, per key, Utils.murmur2 followed by the partition
// BuiltInPartitioner.partitionForKey picks for each partition count given as
// arguments, space-separated. Built with javac against kafka-clients at test
// time, so the expectation always comes from the real Java client.

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.utils.Utils;

public final class PartitionerVectors {
    public static void main(String[] args) throws Exception {
        int[] counts = new int[args.length];
        for (int i = 0; i < args.length; i++) {
            counts[i] = Integer.parseInt(args[i]);
        }
        HexFormat hex = HexFormat.of();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.US_ASCII));
        String line;
        while ((line = in.readLine()) != null) {
            byte[] key = hex.parseHex(line.strip());
            StringBuilder sb = new StringBuilder();
            sb.append(Utils.murmur2(key));
            for (int n : counts) {
                sb.append(' ').append(BuiltInPartitioner.partitionForKey(key, n));
            }
            out.write(sb.toString());
            out.newLine();
        }
        out.flush();
    }
}
