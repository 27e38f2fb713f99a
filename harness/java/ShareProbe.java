// The readiness probe of a release whose share groups librdkafka cannot talk to (4.0, 4.1): a
// KafkaShareConsumer of the release itself joins <group>, subscribes to <topic> and polls until it
// receives a record whose value is <token>, then prints {"received":true}; it throws if <timeoutMs>
// pass first. Usage: java -cp <kafka libs>:<dir> ShareProbe <bootstrap> <group> <topic> <token> <timeoutMs>
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ShareProbe {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("group.id", args[1]);
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        byte[] token = args[3].getBytes(StandardCharsets.UTF_8);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[4]);
        try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(List.of(args[2]));
            while (System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    if (java.util.Arrays.equals(record.value(), token)) {
                        System.out.println("{\"received\":true}");
                        return;
                    }
                }
            }
        }
        throw new IllegalStateException("no record " + args[3] + " from " + args[2] + " within " + args[4] + " ms");
    }
}
