// Decodes one share group's records in the __share_group_state topic with the share coordinator's own
// serde (the release's classes, so the format is the release's) and prints them, in log order per
// state partition, as one JSON line:
// {"records":[{"type":"snapshot"|"update"|"tombstone","topic_id","partition","start_offset","leader_epoch",
//              "state_epoch" (snapshots), "batches":[[first_offset,last_offset,delivery_state,delivery_count],...],
//              "timestamp" (the record's, ms)}]}
// Usage: java -cp <kafka libs>:<dir> ShareState <bootstrap> <group>
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.share.ShareCoordinatorRecordSerde;
import org.apache.kafka.coordinator.share.generated.ShareSnapshotKey;
import org.apache.kafka.coordinator.share.generated.ShareSnapshotValue;
import org.apache.kafka.coordinator.share.generated.ShareUpdateKey;
import org.apache.kafka.coordinator.share.generated.ShareUpdateValue;

public class ShareState {
    static final String TOPIC = "__share_group_state";

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        props.put("enable.auto.commit", "false");
        props.put("isolation.level", "read_committed");
        String group = args[1];
        ShareCoordinatorRecordSerde serde = new ShareCoordinatorRecordSerde();
        StringBuilder out = new StringBuilder("{\"records\":[");
        boolean first = true;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo info : consumer.partitionsFor(TOPIC, Duration.ofSeconds(20))) {
                partitions.add(new TopicPartition(TOPIC, info.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions, Duration.ofSeconds(20));
            long deadline = System.currentTimeMillis() + 30_000;
            while (!reachedEnd(consumer, partitions, end)) {
                if (System.currentTimeMillis() > deadline) {
                    throw new RuntimeException(TOPIC + " was not read to its end offsets within 30 s");
                }
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    if (record.key() == null) continue;
                    CoordinatorRecord decoded = serde.deserialize(ByteBuffer.wrap(record.key()),
                        record.value() == null ? null : ByteBuffer.wrap(record.value()));
                    String json = render(decoded, group);
                    if (json == null) continue;
                    // the record's timestamp: when the share coordinator wrote it (its clock)
                    json = json.substring(0, json.length() - 1) + ",\"timestamp\":" + record.timestamp() + "}";
                    out.append(first ? "" : ",").append(json);
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

    static String render(CoordinatorRecord record, String group) {
        ApiMessage key = record.key();
        String type, groupId, topicId;
        int partition;
        if (key instanceof ShareSnapshotKey k) {
            type = "snapshot"; groupId = k.groupId(); topicId = k.topicId().toString(); partition = k.partition();
        } else if (key instanceof ShareUpdateKey k) {
            type = "update"; groupId = k.groupId(); topicId = k.topicId().toString(); partition = k.partition();
        } else {
            return null;
        }
        if (!groupId.equals(group)) return null;
        StringBuilder s = new StringBuilder();
        long start = -1;
        int leaderEpoch = -1, stateEpoch = -1;
        if (record.value() == null) {
            type = "tombstone";
        } else if (record.value().message() instanceof ShareSnapshotValue v) {
            start = v.startOffset();
            leaderEpoch = v.leaderEpoch();
            stateEpoch = v.stateEpoch();
            for (ShareSnapshotValue.StateBatch b : v.stateBatches()) {
                batch(s, b.firstOffset(), b.lastOffset(), b.deliveryState(), b.deliveryCount());
            }
        } else if (record.value().message() instanceof ShareUpdateValue v) {
            start = v.startOffset();
            leaderEpoch = v.leaderEpoch();
            for (ShareUpdateValue.StateBatch b : v.stateBatches()) {
                batch(s, b.firstOffset(), b.lastOffset(), b.deliveryState(), b.deliveryCount());
            }
        }
        return "{\"type\":\"" + type + "\",\"topic_id\":\"" + topicId + "\",\"partition\":" + partition
            + ",\"start_offset\":" + start + ",\"leader_epoch\":" + leaderEpoch + ",\"state_epoch\":" + stateEpoch
            + ",\"batches\":[" + s + "]}";
    }

    static void batch(StringBuilder s, long first, long last, byte state, short count) {
        s.append(s.length() == 0 ? "" : ",").append("[").append(first).append(",").append(last).append(",")
         .append(state).append(",").append(count).append("]");
    }
}
