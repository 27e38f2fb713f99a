// Prints the KRaft metadata quorum as one JSON line: {"leader":id,"voters":[ids]}
// (Admin.describeMetadataQuorum, forwarded by a broker to the active controller).
// Usage: java -cp <kafka libs>:<dir> Quorum <bootstrap>
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.QuorumInfo;

public class Quorum {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("request.timeout.ms", "5000");
        props.put("default.api.timeout.ms", "10000");
        try (Admin admin = Admin.create(props)) {
            QuorumInfo info = admin.describeMetadataQuorum().quorumInfo().get(15, TimeUnit.SECONDS);
            StringBuilder out = new StringBuilder("{\"leader\":").append(info.leaderId()).append(",\"voters\":[");
            boolean first = true;
            for (QuorumInfo.ReplicaState voter : info.voters()) {
                out.append(first ? "" : ",").append(voter.replicaId());
                first = false;
            }
            System.out.println(out.append("]}"));
        }
    }
}
