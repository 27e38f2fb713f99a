// Share-group administration for the conformance suites (Admin API, Kafka 4.2+). Prints one JSON
// line: the result, or {"error": "<ExceptionClass>", "message": "..."} when the call failed.
// Usage: java -cp <kafka libs>:<dir> ShareAdmin <bootstrap> <command> [args]
// Client properties (e.g. SASL credentials) are read from the file KSH_CLIENT_PROPERTIES names, if set.
//   describe <group>                 {"group","state","coordinator","members":[{"member","client","rack","partitions":[[topic,p]]}]}
//   list                             {"groups":[{"group","type","state"}]} (all types)
//   delete <group>                   {"deleted": true}
//   alter-offsets <group> <topic> <partition> <offset>   {"altered": true}
//   delete-offsets <group> <topic>   {"deleted": true}
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.common.TopicPartition;

public class ShareAdmin {
    static String q(String s) {
        return s == null ? "null" : "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("request.timeout.ms", "10000");
        props.put("default.api.timeout.ms", "20000");
        String extra = System.getenv("KSH_CLIENT_PROPERTIES");
        if (extra != null && !extra.isEmpty()) {
            try (java.io.FileReader in = new java.io.FileReader(extra)) {
                props.load(in);
            }
        }
        try (Admin admin = Admin.create(props)) {
            System.out.println(run(admin, args));
        } catch (ExecutionException e) {
            Throwable c = e.getCause() == null ? e : e.getCause();
            System.out.println("{\"error\":" + q(c.getClass().getSimpleName()) + ",\"message\":" + q(c.getMessage()) + "}");
        }
    }

    static String run(Admin admin, String[] a) throws Exception {
        switch (a[1]) {
            case "describe": {
                ShareGroupDescription d = admin.describeShareGroups(List.of(a[2])).describedGroups().get(a[2])
                    .get(30, TimeUnit.SECONDS);
                List<String> members = new ArrayList<>();
                for (ShareMemberDescription m : d.members()) {
                    List<String> parts = new ArrayList<>();
                    for (TopicPartition tp : m.assignment().topicPartitions())
                        parts.add("[" + q(tp.topic()) + "," + tp.partition() + "]");
                    members.add("{\"member\":" + q(m.consumerId()) + ",\"client\":" + q(m.clientId())
                        + ",\"rack\":" + (m.rackId().isPresent() ? q(m.rackId().get()) : "null")
                        + ",\"partitions\":[" + String.join(",", parts) + "]}");
                }
                return "{\"group\":" + q(d.groupId()) + ",\"state\":" + q(String.valueOf(d.groupState()))
                    + ",\"coordinator\":" + (d.coordinator() == null ? "null" : d.coordinator().id())
                    + ",\"members\":[" + String.join(",", members) + "]}";
            }
            case "list": {
                List<String> groups = new ArrayList<>();
                for (GroupListing g : admin.listGroups().all().get(30, TimeUnit.SECONDS))
                    groups.add("{\"group\":" + q(g.groupId()) + ",\"type\":"
                        + q(g.type().map(Object::toString).orElse(null)) + ",\"state\":"
                        + q(g.groupState().map(Object::toString).orElse(null)) + "}");
                return "{\"groups\":[" + String.join(",", groups) + "]}";
            }
            case "delete":
                admin.deleteShareGroups(List.of(a[2])).all().get(30, TimeUnit.SECONDS);
                return "{\"deleted\":true}";
            case "alter-offsets":
                admin.alterShareGroupOffsets(a[2], Map.of(new TopicPartition(a[3], Integer.parseInt(a[4])),
                    Long.parseLong(a[5]))).all().get(30, TimeUnit.SECONDS);
                return "{\"altered\":true}";
            case "delete-offsets":
                admin.deleteShareGroupOffsets(a[2], Set.of(a[3])).all().get(30, TimeUnit.SECONDS);
                return "{\"deleted\":true}";
            default:
                return "{\"error\":\"UsageError\",\"message\":" + q("unknown command " + a[1]) + "}";
        }
    }
}
