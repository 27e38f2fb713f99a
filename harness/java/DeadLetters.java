// Reads a share group's dead-letter queue topic (KIP-1191) from its beginning to its end offsets and
// prints every record, in offset order per partition, as one JSON line:
// {"records":[{"partition","offset","timestamp","key","value","headers":{name: value}}]}
// (key, value and header values as UTF-8 strings, null when absent).
// Usage: java -cp <kafka libs>:<dir> DeadLetters <bootstrap> <topic>
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class DeadLetters {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        props.put("enable.auto.commit", "false");
        String topic = args[1];
        StringBuilder out = new StringBuilder("{\"records\":[");
        boolean first = true;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofSeconds(20));
            if (infos == null || infos.isEmpty()) {
                throw new RuntimeException("no topic " + topic);
            }
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo info : infos) {
                partitions.add(new TopicPartition(topic, info.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions, Duration.ofSeconds(20));
            long deadline = System.currentTimeMillis() + 30_000;
            while (!reachedEnd(consumer, partitions, end)) {
                if (System.currentTimeMillis() > deadline) {
                    throw new RuntimeException(topic + " was not read to its end offsets within 30 s");
                }
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    StringBuilder headers = new StringBuilder("{");
                    boolean firstHeader = true;
                    for (Header h : record.headers()) {
                        headers.append(firstHeader ? "" : ",").append(q(h.key())).append(":").append(q(text(h.value())));
                        firstHeader = false;
                    }
                    out.append(first ? "" : ",")
                       .append("{\"partition\":").append(record.partition())
                       .append(",\"offset\":").append(record.offset())
                       .append(",\"timestamp\":").append(record.timestamp())
                       .append(",\"key\":").append(q(text(record.key())))
                       .append(",\"value\":").append(q(text(record.value())))
                       .append(",\"headers\":").append(headers.append("}")).append("}");
                    first = false;
                }
            }
        }
        System.out.println(out.append("]}"));
    }

    static boolean reachedEnd(KafkaConsumer<byte[], byte[]> consumer, List<TopicPartition> partitions,
                              Map<TopicPartition, Long> end) {
        for (TopicPartition tp : partitions) {
            if (consumer.position(tp) < end.get(tp)) return false;
        }
        return true;
    }

    static String text(byte[] bytes) {
        return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
    }

    static String q(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }
}
