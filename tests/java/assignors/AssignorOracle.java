// Test-time oracle for kafkacore's assignors: runs the Java client's own
// assignors (kafka-clients, org.apache.kafka.clients.consumer) on cases
// read from stdin and prints their plans, so the tests compare plan for plan.
//
// Input, one command per line, text fields hex-encoded UTF-8 ("-" = absent):
//   case <assignor name>
//   topic <name> <count> <racks>       racks: "-", or "r" then one comma list of hex racks
//                                      per partition, partitions separated by ';'
//   member <id> <instance> <rack> <generation> <topics> <owned> <userdata>
//                                      topics: comma list of names; owned: topic:partition list;
//                                      userdata: hex bytes
//   run                                -> "member <id> topic:partition ..." per member, then "end"
//   stickydata <generation> <owned>   -> hex of StickyAssignor's subscription user data
//   coopdata <generation>              -> hex of CooperativeStickyAssignor's user data

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

public final class AssignorOracle {
    private static final HexFormat HEX = HexFormat.of();

    private static String text(String hex) {
        return hex.equals("-") ? null : new String(HEX.parseHex(hex), StandardCharsets.UTF_8);
    }

    private static List<TopicPartition> partitions(String spec) {
        List<TopicPartition> out = new ArrayList<>();
        if (spec.equals("-")) {
            return out;
        }
        for (String item : spec.split(",")) {
            int colon = item.lastIndexOf(':');
            out.add(new TopicPartition(item.substring(0, colon), Integer.parseInt(item.substring(colon + 1))));
        }
        return out;
    }

    private static ConsumerPartitionAssignor assignor(String name) {
        switch (name) {
            case "range": return new RangeAssignor();
            case "roundrobin": return new RoundRobinAssignor();
            case "sticky": return new StickyAssignor();
            case "cooperative-sticky": return new CooperativeStickyAssignor();
            default: throw new IllegalArgumentException("unknown assignor " + name);
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.US_ASCII);
        String name = null;
        Map<String, Node> rackNodes = new LinkedHashMap<>();
        Node plainNode = new Node(0, "localhost", 9092);
        List<PartitionInfo> infos = new ArrayList<>();
        Map<String, Subscription> subs = new LinkedHashMap<>();
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.strip().split(" ");
            switch (f[0]) {
                case "case":
                    name = f[1];
                    rackNodes.clear();
                    infos.clear();
                    subs.clear();
                    break;
                case "topic": {
                    int count = Integer.parseInt(f[2]);
                    String[] perPartition = f[3].equals("-") ? null : f[3].substring(1).split(";", -1);
                    for (int p = 0; p < count; p++) {
                        List<Node> replicas = new ArrayList<>();
                        if (perPartition == null) {
                            replicas.add(plainNode);
                        } else if (!perPartition[p].isEmpty()) {
                            for (String rackHex : perPartition[p].split(",")) {
                                String rack = text(rackHex);
                                replicas.add(rackNodes.computeIfAbsent(rack,
                                    r -> new Node(1 + rackNodes.size(), "localhost", 9092, r)));
                            }
                        }
                        Node[] nodes = replicas.toArray(new Node[0]);
                        infos.add(new PartitionInfo(f[1], p, nodes.length > 0 ? nodes[0] : null, nodes, nodes));
                    }
                    break;
                }
                case "member": {
                    String id = text(f[1]);
                    List<String> topics = f[5].equals("-") ? new ArrayList<>() : new ArrayList<>(Arrays.asList(f[5].split(",")));
                    ByteBuffer userData = f[7].equals("-") ? null : ByteBuffer.wrap(HEX.parseHex(f[7]));
                    Subscription s = new Subscription(topics, userData, partitions(f[6]), Integer.parseInt(f[4]),
                        Optional.ofNullable(text(f[3])));
                    s.setGroupInstanceId(Optional.ofNullable(text(f[2])));
                    subs.put(id, s);
                    break;
                }
                case "run": {
                    Set<Node> nodes = new HashSet<>(rackNodes.values());
                    nodes.add(plainNode);
                    Cluster cluster = new Cluster("oracle", nodes, infos, Collections.emptySet(), Collections.emptySet());
                    Map<String, Assignment> plan = assignor(name).assign(cluster, new GroupSubscription(subs)).groupAssignment();
                    for (Map.Entry<String, Assignment> e : new TreeMap<>(plan).entrySet()) {
                        StringBuilder sb = new StringBuilder("member ").append(HEX.formatHex(e.getKey().getBytes(StandardCharsets.UTF_8)));
                        for (TopicPartition tp : e.getValue().partitions()) {
                            sb.append(' ').append(tp.topic()).append(':').append(tp.partition());
                        }
                        out.println(sb);
                    }
                    out.println("end");
                    break;
                }
                case "stickydata": {
                    StickyAssignor a = new StickyAssignor();
                    a.onAssignment(new Assignment(partitions(f[2])),
                        new ConsumerGroupMetadata("g", Integer.parseInt(f[1]), "m", Optional.empty()));
                    out.println(HEX.formatHex(bytes(a.subscriptionUserData(new HashSet<>()))));
                    break;
                }
                case "coopdata": {
                    CooperativeStickyAssignor a = new CooperativeStickyAssignor();
                    a.onAssignment(new Assignment(new ArrayList<>()),
                        new ConsumerGroupMetadata("g", Integer.parseInt(f[1]), "m", Optional.empty()));
                    out.println(HEX.formatHex(bytes(a.subscriptionUserData(new HashSet<>()))));
                    break;
                }
                default:
                    throw new IllegalArgumentException("bad command: " + line);
            }
        }
        out.flush();
    }

    private static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }
}
