// Reads a share group's start offsets with the Admin API (listShareGroupOffsets, Kafka 4.2+)
// and prints them as one JSON line: {"partitions":[{"topic","partition","start_offset","lag"}]}
// (lag: what the release reports, null where it reports none).
// Usage: java -cp <kafka libs>:<dir> ShareOffsets <bootstrap> <group>
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.TopicPartition;

public class ShareOffsets {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("request.timeout.ms", "10000");
        props.put("default.api.timeout.ms", "20000");
        try (Admin admin = Admin.create(props)) {
            Map<TopicPartition, SharePartitionOffsetInfo> offsets = admin
                .listShareGroupOffsets(Map.of(args[1], new ListShareGroupOffsetsSpec()))
                .partitionsToOffsetInfo(args[1]).get(30, TimeUnit.SECONDS);
            StringBuilder out = new StringBuilder("{\"partitions\":[");
            boolean first = true;
            for (Map.Entry<TopicPartition, SharePartitionOffsetInfo> e : offsets.entrySet()) {
                if (e.getValue() == null) continue;  // no state for this partition yet
                out.append(first ? "" : ",").append("{\"topic\":\"").append(e.getKey().topic())
                   .append("\",\"partition\":").append(e.getKey().partition())
                   .append(",\"start_offset\":").append(e.getValue().startOffset())
                   .append(",\"lag\":").append(e.getValue().lag().map(String::valueOf).orElse("null")).append("}");
                first = false;
            }
            System.out.println(out.append("]}"));
        }
    }
}
