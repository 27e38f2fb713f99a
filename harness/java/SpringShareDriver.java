// A step-mode driver (docs/driver.md, contract 4)
// for Spring for Apache Kafka's share consumer container (spring-kafka 4.1.x), run with the release's
// kafka-clients (4.2+). Design: docs/design/spring-driver.md (issue 49): the `spring` driver (harness.clients.driver.SpringStepDriver).
//
// Shape: the container (ShareKafkaMessageListenerContainer) runs its own consumer thread and poll loop, unchanged.
// The driver gives it a ShareConsumerFactory that wraps each ShareConsumer in a recording, *gating* proxy:
//  - poll(): the container's consumer thread may only really poll while the harness's `poll` command is open (a
//    permit), so nothing is acquired behind the harness's back; otherwise it waits, then returns no records;
//  - acknowledge/commitSync/commitAsync/close: passed through, with what really happened printed as JSON ops.
// The listener (AcknowledgingShareConsumerAwareMessageListener, ShareAckMode.MANUAL) only hands each record and its
// ShareAcknowledgment to the main thread and returns; the `ack` command calls ShareAcknowledgment, which queues the
// acknowledgement for the consumer thread; the driver nudges that thread round its loop and waits to see the
// acknowledge() reach the client.
//
// Compile: javac -cp <spring jars>:<kafka release libs> -d <dir> SpringShareDriver.java
// Usage:   java -cp <dir>:<spring jars>:<kafka release libs> SpringShareDriver '<json config>'
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.AcknowledgementCommitCallback;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.ShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.springframework.kafka.core.DefaultShareConsumerFactory;
import org.springframework.kafka.core.ShareConsumerFactory;
import org.springframework.kafka.listener.AcknowledgingShareConsumerAwareMessageListener;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.ShareKafkaMessageListenerContainer;
import org.springframework.kafka.support.ShareAcknowledgment;

public class SpringShareDriver {
    static final ObjectMapper JSON = new ObjectMapper();
    static final long APPLY_TIMEOUT_MS = 10_000;  // how long an `ack` waits for the consumer thread to apply it
    static final long COMMIT_SYNC = -2, COMMIT_ASYNC = -3;  // Gate.awaitPermit: commit instead of polling

    static synchronized void emit(String type, String f, ObjectNode value) {
        ObjectNode op = JSON.createObjectNode();
        op.put("type", type);
        op.put("f", f);
        op.set("value", value);
        System.out.println(op.toString());
        System.out.flush();
    }

    static ObjectNode obj() { return JSON.createObjectNode(); }

    static String errorText(Throwable e) {
        if (e == null) return null;
        Throwable c = e;
        while (c.getCause() != null && !(c instanceof ApiException)) c = c.getCause();
        return c.getClass().getSimpleName() + ": " + c.getMessage();
    }

    static String key(String topic, int partition, long offset) { return topic + "\u0000" + partition + "\u0000" + offset; }

    /** A record the listener was given, with the container's acknowledgment handle (null unless MANUAL). */
    record Handed(ConsumerRecord<byte[], byte[]> record, ShareAcknowledgment ack) { }

    /** What the client did with one acknowledgement the container applied: null error = accepted by the client. */
    record Applied(AcknowledgeType type, String error) { }

    /** Where the container's consumer thread (in the proxy's poll) and the driver's main thread meet. */
    static final class Gate {
        private long permitUntil;     // System.nanoTime() deadline of the harness's open `poll` command; 0: none
        private boolean nudged;       // acknowledgements were queued: go round the container loop once, no real poll
        private boolean polling;      // the consumer thread is in a real poll (it may return records after the window)
        private int commitWanted;     // the harness's commit_sync (1) or commit_async (2), for the consumer thread
        private boolean commitRan;    // the consumer thread ran it
        private String commitError;   // what it raised
        private boolean closing;
        private String gone;          // set when the container closed its consumer (its thread ended): why
        private long idleCount;       // times the consumer thread entered the gated wait
        private long deliveredAtIdle = -1;  // idleCount when the last batch with records arrived
        private int delivered;        // records of the batch delivered in the current window
        private String pollError;     // the client's last poll exception in the current window
        private final IdentityHashMap<ConsumerRecord<?, ?>, List<Applied>> applied = new IdentityHashMap<>();
        String closeError;
        volatile boolean closedByContainer;  // the container closed the client before the harness's close (recorded then)

        /** In the proxy's poll: wait for a permit; ms the real poll may take, or -1 (return no records). */
        synchronized long awaitPermit(long timeoutMs) throws InterruptedException {
            idleCount++;
            notifyAll();
            long end = System.nanoTime() + timeoutMs * 1_000_000L;
            while (true) {
                long now = System.nanoTime();
                if (closing) { wait(10); return -1; }  // (no spin while stop() sets running=false)
                if (commitWanted != 0) { int c = commitWanted; commitWanted = 0; return c == 1 ? COMMIT_SYNC : COMMIT_ASYNC; }
                if (nudged) { nudged = false; return -1; }
                if (permitUntil != 0 && now < permitUntil) return Math.max(50, Math.min((permitUntil - now) / 1_000_000, 500));
                if (now >= end) return -1;
                long waitMs = (end - now) / 1_000_000;
                if (permitUntil != 0 && permitUntil > now) waitMs = Math.min(waitMs, (permitUntil - now) / 1_000_000);
                wait(Math.max(1, waitMs));
            }
        }

        synchronized void polling(boolean in) { polling = in; notifyAll(); }

        synchronized void batch(int count) { delivered = count; permitUntil = 0; deliveredAtIdle = idleCount; notifyAll(); }

        /** A real poll raised `error`; true the first time in this window (the container polls again at once). */
        synchronized boolean pollFailed(String error) {
            boolean first = pollError == null;
            pollError = error;
            notifyAll();
            return first;
        }

        synchronized void applied(ConsumerRecord<?, ?> r, AcknowledgeType type, String error) {
            applied.computeIfAbsent(r, k -> new ArrayList<>()).add(new Applied(type, error));
            notifyAll();
        }

        /** The harness's poll: open the window for `seconds`; the batch's size once the container has dispatched it
         *  (it is back in the gated wait), or 0 when the window closed without records. */
        synchronized int pollWindow(double seconds) throws InterruptedException {
            delivered = 0;
            pollError = null;
            deliveredAtIdle = -1;
            permitUntil = System.nanoTime() + (long) (seconds * 1e9);
            notifyAll();
            long hardEnd = permitUntil + 60_000_000_000L;  // the container thread must come back by then
            while (true) {
                if (gone != null) { permitUntil = 0; pollError = gone; return delivered; }
                if (deliveredAtIdle >= 0 && idleCount > deliveredAtIdle) return delivered;  // dispatched and committed
                if (deliveredAtIdle < 0 && !polling && System.nanoTime() >= permitUntil) { permitUntil = 0; return 0; }
                if (System.nanoTime() >= hardEnd) { permitUntil = 0; return delivered; }
                wait(20);
            }
        }

        synchronized String pollError() { return pollError; }

        synchronized void nudge() { nudged = true; notifyAll(); }

        /** The harness's commit: the consumer thread calls commitSync/commitAsync on the container's ShareConsumer (the
         *  one spring-kafka hands to an AcknowledgingShareConsumerAwareMessageListener) at its next turn; its error. */
        synchronized String commit(boolean async) throws InterruptedException {
            commitWanted = async ? 2 : 1;
            commitRan = false;
            commitError = null;
            notifyAll();
            long end = System.nanoTime() + 60_000_000_000L;
            while (!commitRan) {
                if (gone != null) { commitWanted = 0; return gone; }
                if (System.nanoTime() >= end) { commitWanted = 0; return "the container's consumer thread did not commit within 60 s"; }
                wait(20);
            }
            return commitError;
        }

        synchronized void committed(String error) { commitRan = true; commitError = error; notifyAll(); }

        synchronized Applied awaitApplied(ConsumerRecord<?, ?> r, AcknowledgeType type, long deadlineNanos) throws InterruptedException {
            while (true) {
                List<Applied> seen = applied.get(r);
                if (seen != null) {
                    for (Iterator<Applied> it = seen.iterator(); it.hasNext(); ) {
                        Applied a = it.next();
                        if (a.type() == type) { it.remove(); return a; }
                    }
                }
                long left = (deadlineNanos - System.nanoTime()) / 1_000_000;
                if (left <= 0) return null;
                wait(Math.min(left, 20));
            }
        }

        synchronized void close() { closing = true; notifyAll(); }

        /** The container closed the client: at our close, or because its consumer thread ended on an error
         *  (ShareKafkaMessageListenerContainer: any poll exception but a deserialization, CRC or MANUAL-blocked one). */
        synchronized boolean consumerClosed() {
            gone = "the container's consumer thread ended and closed its ShareConsumer" + (pollError == null ? "" : ": " + pollError);
            notifyAll();
            return closing;
        }
    }

    /** The ShareConsumer the container gets: the factory's own, behind the gate, printing what it does. */
    static final class Recorder implements InvocationHandler {
        final ShareConsumer<byte[], byte[]> real;
        final Gate gate;
        final boolean explicit;
        final List<ConsumerRecord<byte[], byte[]>> implicitPending = new ArrayList<>();

        Recorder(ShareConsumer<byte[], byte[]> real, Gate gate, boolean explicit) {
            this.real = real;
            this.gate = gate;
            this.explicit = explicit;
        }

        @SuppressWarnings("unchecked")
        static ShareConsumer<byte[], byte[]> wrap(ShareConsumer<byte[], byte[]> real, Gate gate, boolean explicit) {
            return (ShareConsumer<byte[], byte[]>) Proxy.newProxyInstance(ShareConsumer.class.getClassLoader(),
                new Class<?>[] {ShareConsumer.class}, new Recorder(real, gate, explicit));
        }

        @Override
        @SuppressWarnings("unchecked")
        public Object invoke(Object proxy, Method m, Object[] args) throws Throwable {
            switch (m.getName()) {
                case "poll":
                    return poll((Duration) args[0]);
                case "acknowledge":
                    if (args.length == 2) return acknowledge((ConsumerRecord<byte[], byte[]>) args[0], (AcknowledgeType) args[1]);
                    break;  // (String, int, long, type): the container's REJECT of an undeserializable record; (record): unused
                case "commitSync":
                    return commitSync(m, args);
                case "commitAsync": {
                    flushImplicit();
                    ObjectNode async = obj();
                    async.put("async", true);
                    emit("invoke", "commit", async);
                    return call(m, args);
                }
                case "close":
                    if (!gate.consumerClosed()) {  // not at our close: the container gave up (its log says why)
                        ObjectNode err = obj();
                        err.putNull("code");
                        err.put("message", "spring-kafka's consumer thread stopped; the container closes its consumer");
                        emit("info", "error", err);
                        // the client's close is recorded where it happens: what the consumer held is released
                        // now, not at the harness's close (the history must not show it holding them until then)
                        gate.closedByContainer = true;
                        emit("invoke", "close", obj());
                        try {
                            Object r = call(m, args);
                            emit("ok", "close", obj());
                            return r;
                        } catch (Throwable e) {
                            ObjectNode v = obj();
                            v.put("error", errorText(e));
                            emit("info", "close", v);
                            throw e;
                        }
                    }
                    try {
                        return call(m, args);
                    } catch (Throwable e) {
                        gate.closeError = errorText(e);
                        throw e;
                    }
                default:
            }
            return call(m, args);
        }

        Object call(Method m, Object[] args) throws Throwable {
            try {
                return m.invoke(real, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        }

        ConsumerRecords<byte[], byte[]> poll(Duration timeout) throws Exception {
            long ms = gate.awaitPermit(timeout.toMillis());
            if (ms == COMMIT_SYNC || ms == COMMIT_ASYNC) {
                gate.committed(commitNow(ms == COMMIT_ASYNC));
                return ConsumerRecords.empty();
            }
            if (ms < 0) return ConsumerRecords.empty();
            flushImplicit();
            ConsumerRecords<byte[], byte[]> batch;
            gate.polling(true);  // a real poll that outlives the window still belongs to the harness's poll command
            try {
                batch = real.poll(Duration.ofMillis(ms));
            } catch (RuntimeException e) {
                gate.polling(false);  // e.g. IllegalStateException: unacknowledged records (MANUAL)
                if (gate.pollFailed(errorText(e))) {  // recorded as ShareDriver does, once per poll command
                    ObjectNode err = obj();
                    err.putNull("code");
                    err.put("message", "poll: " + errorText(e));
                    emit("info", "error", err);
                }
                throw e;
            }
            if (!batch.isEmpty()) {
                ObjectNode v = obj();
                ArrayNode rs = v.putArray("records");
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    ObjectNode o = rs.addObject();
                    o.put("id", r.value() == null ? "" : new String(r.value(), StandardCharsets.UTF_8));
                    o.put("topic", r.topic());
                    o.put("partition", r.partition());
                    o.put("offset", r.offset());
                    o.put("delivery_count", r.deliveryCount().map(Short::intValue).orElse(-1));
                    if (!explicit) implicitPending.add(r);
                }
                emit("ok", "poll", v);
                gate.batch(batch.count());
            }
            gate.polling(false);
            return batch;
        }

        Object acknowledge(ConsumerRecord<byte[], byte[]> r, AcknowledgeType type) {
            try {
                real.acknowledge(r, type);
            } catch (RuntimeException e) {
                gate.applied(r, type, errorText(e));
                throw e;  // the container logs it ("Failed to process queued acknowledgment") and goes on
            }
            gate.applied(r, type, null);
            return null;
        }

        Object commitSync(Method m, Object[] args) throws Throwable {
            flushImplicit();
            emit("invoke", "commit", obj());
            try {
                @SuppressWarnings("unchecked")
                Map<TopicIdPartition, Optional<KafkaException>> results = (Map<TopicIdPartition, Optional<KafkaException>>) call(m, args);
                emitResults(results);
                return results;
            } catch (KafkaException e) {
                ObjectNode v = obj();
                v.put("error", errorText(e));
                emit("info", "commit", v);
                throw e;
            }
        }

        /** A commitSync's per-partition results, as the `commit` ok operation (docs/driver.md). */
        void emitResults(Map<TopicIdPartition, Optional<KafkaException>> results) {
            ObjectNode v = obj();
            ArrayNode rs = v.putArray("results");
            for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : results.entrySet()) {
                ObjectNode o = rs.addObject();
                o.put("topic", e.getKey().topic());
                o.put("partition", e.getKey().partition());
                o.put("error", e.getValue().map(SpringShareDriver::errorText).orElse(null));
            }
            emit("ok", "commit", v);
        }

        /** The harness's commit_sync / commit_async, on the container's consumer thread: the error, or null. */
        String commitNow(boolean async) {
            flushImplicit();
            if (async) {
                ObjectNode v = obj();
                v.put("async", true);  // no result here: the callback brings it
                emit("invoke", "commit", v);
                try {
                    real.commitAsync();
                    return null;
                } catch (RuntimeException e) {
                    return errorText(e);
                }
            }
            emit("invoke", "commit", obj());
            try {
                Map<TopicIdPartition, Optional<KafkaException>> results = real.commitSync(Duration.ofSeconds(30));
                emitResults(results);
                return null;
            } catch (KafkaException e) {
                ObjectNode v = obj();
                v.put("error", errorText(e));
                emit("info", "commit", v);
                return errorText(e);
            }
        }

        /** Implicit mode: the ACCEPTs the client makes as the next poll or commit starts (docs/driver.md). */
        void flushImplicit() {
            if (explicit || implicitPending.isEmpty()) return;
            ObjectNode v = obj();
            ArrayNode rs = v.putArray("records");
            for (ConsumerRecord<byte[], byte[]> r : implicitPending) {
                ObjectNode o = rs.addObject();
                o.put("topic", r.topic());
                o.put("partition", r.partition());
                o.put("offset", r.offset());
                o.put("type", "ACCEPT");
            }
            emit("ok", "acknowledge", v);
            implicitPending.clear();
        }
    }

    /** The factory the container gets: DefaultShareConsumerFactory's consumers, each behind a Recorder. */
    static final class GatedFactory implements ShareConsumerFactory<byte[], byte[]> {
        final DefaultShareConsumerFactory<byte[], byte[]> delegate;
        final Gate gate;
        final boolean explicit;

        GatedFactory(DefaultShareConsumerFactory<byte[], byte[]> delegate, Gate gate, boolean explicit) {
            this.delegate = delegate;
            this.gate = gate;
            this.explicit = explicit;
        }

        @Override
        public ShareConsumer<byte[], byte[]> createShareConsumer(String groupId, String clientId) {
            return Recorder.wrap(delegate.createShareConsumer(groupId, clientId), gate, explicit);
        }

        @Override
        public ShareConsumer<byte[], byte[]> createShareConsumer(String groupId, String clientId, Map<String, Object> overrides) {
            return Recorder.wrap(delegate.createShareConsumer(groupId, clientId, overrides), gate, explicit);
        }

        @Override
        public Map<String, Object> getConfigurationProperties() {  // the container reads share.acknowledgement.mode here
            return delegate.getConfigurationProperties();
        }
    }

    public static void main(String[] args) throws Exception {
        JsonNode config = JSON.readTree(args[0]);
        if (!"step".equals(config.path("behaviour").asText())) {
            System.err.println("unknown behaviour " + config.path("behaviour") + ": this driver runs step only");
            System.exit(2);
        }
        boolean explicit = !"implicit".equals(config.path("mode").asText("explicit"));
        ContainerProperties.ShareAckMode mode = explicit ? ContainerProperties.ShareAckMode.MANUAL
                                                         : ContainerProperties.ShareAckMode.IMPLICIT;
        Map<String, Object> props = new HashMap<>();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, config.get("bootstrap").asText());
        ArrayNode ignored = JSON.createArrayNode();
        Set<String> known = ConsumerConfig.configNames();
        String clientId = null;
        for (Iterator<Map.Entry<String, JsonNode>> it = config.path("client_config").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String k = e.getKey();
            if (k.equals(ConsumerConfig.CLIENT_ID_CONFIG)) { clientId = e.getValue().asText(); continue; }  // the container sets client.id
            props.put(k, e.getValue().asText());
            boolean overridden = k.equals(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG) || k.equals(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG);
            if (!known.contains(k) || overridden) ignored.add(k);
        }
        if (!explicit) props.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "implicit");  // IMPLICIT uses the factory's setting as is

        Gate gate = new Gate();
        DefaultShareConsumerFactory<byte[], byte[]> real =
            new DefaultShareConsumerFactory<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer(), true);
        GatedFactory factory = new GatedFactory(real, gate, explicit);

        Map<String, Handed> handed = new ConcurrentHashMap<>();
        AcknowledgingShareConsumerAwareMessageListener<byte[], byte[]> listener =
            (ConsumerRecord<byte[], byte[]> r, ShareAcknowledgment ack, ShareConsumer<?, ?> consumer) ->
                handed.put(key(r.topic(), r.partition(), r.offset()), new Handed(r, ack));  // returns at once: no ack here

        List<String> topics = new ArrayList<>();
        config.get("topics").forEach(t -> topics.add(t.asText()));
        ContainerProperties cp = new ContainerProperties(topics.toArray(new String[0]));
        cp.setGroupId(config.get("group").asText());
        if (clientId != null) cp.setClientId(clientId);
        cp.setShareAckMode(mode);
        cp.setSyncShareCommits(true);  // the default; false: commitAsync after each batch
        cp.setShareAcknowledgmentTimeout(Duration.ofHours(1));  // only a log warning; keep it quiet while the harness holds records
        AcknowledgementCommitCallback callback = (Map<TopicIdPartition, Set<Long>> offsets, Exception exc) -> {
            ObjectNode v = obj();
            ArrayNode parts = v.putArray("partitions");
            for (Map.Entry<TopicIdPartition, Set<Long>> e : offsets.entrySet()) {
                ObjectNode p = parts.addObject();
                p.put("topic", e.getKey().topic());
                p.put("partition", e.getKey().partition());
                ArrayNode os = p.putArray("offsets");
                e.getValue().stream().sorted().forEach(os::add);
            }
            v.put("error", errorText(exc));
            emit("ok", "callback", v);
        };
        cp.setAcknowledgementCommitCallback(callback);
        cp.setMessageListener(listener);

        ShareKafkaMessageListenerContainer<byte[], byte[]> container = new ShareKafkaMessageListenerContainer<>(factory, cp);
        container.setBeanName("ksh-spring");
        // 4.1.2's constructor copies the properties (BeanUtils.copyProperties, GH-4660): check the copy kept the mode
        if (container.getContainerProperties().getShareAckMode() != mode) {
            System.err.println("spring-kafka copied ShareAckMode " + container.getContainerProperties().getShareAckMode()
                               + " instead of " + mode);
            System.exit(2);
        }
        container.start();  // builds the consumer and subscribes on this thread, then awaits the consumer thread's start

        ObjectNode start = obj();
        start.put("client", "spring-kafka");
        start.put("client_version", String.valueOf(ShareKafkaMessageListenerContainer.class.getPackage().getImplementationVersion()));
        start.put("kafka_clients_version", kafkaClientsVersion());
        start.put("behaviour", "step");
        start.put("mode", explicit ? "explicit" : "implicit");
        start.put("share_ack_mode", mode.name());
        start.put("contract", 4);  // docs/driver.md; contract 2's, 3's and 4's commands not implemented here (the features are not declared)
        start.set("ignored_config", ignored);
        emit("ok", "start", start);

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        int n = 0;
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            n++;
            ObjectNode reply = obj();
            reply.put("n", n);
            String cmd;
            JsonNode command;
            try {
                command = JSON.readTree(line);
                cmd = command.get("cmd").asText();
            } catch (Exception e) {
                ObjectNode err = obj();
                err.putNull("code");
                err.put("message", "bad command: " + line);
                emit("info", "error", err);
                reply.putNull("cmd");
                emit("ok", "step", reply);
                continue;
            }
            reply.put("cmd", cmd);
            if (cmd.equals("close")) break;
            switch (cmd) {
                case "poll": {
                    int count = gate.pollWindow(command.path("timeout").asDouble(5.0));
                    reply.put("records", count);
                    if (count == 0 && gate.pollError() != null) reply.put("error", gate.pollError());
                    break;
                }
                case "ack":
                    reply.put("error", ack(command, handed, gate));
                    break;
                case "commit_sync":
                case "commit_async": {
                    // ShareAcknowledgment: "The acknowledgment will be committed when: [...] commitSync() or commitAsync()
                    // is explicitly called": on the ShareConsumer the container hands its listeners, on its consumer
                    // thread (the container also commits after each batch by itself: ContainerProperties.syncShareCommits)
                    String error = gate.commit(cmd.equals("commit_async"));
                    if (error != null) reply.put("error", error);
                    break;
                }
                default:
                    reply.put("error", "unknown command " + cmd);
            }
            emit("ok", "step", reply);
        }
        boolean already = gate.closedByContainer;  // its close is in the history already: one close per client
        if (!already) emit("invoke", "close", obj());
        gate.close();  // wakes the consumer thread out of the gated poll; its loop ends
        try {
            container.stop();  // joins the consumer thread: wrapUp drains queued acks, commits, closes the client
            if (already) {
                // nothing more to record: the client closed when the container gave up
            } else if (gate.closeError != null) {
                ObjectNode v = obj();
                v.put("error", gate.closeError);
                emit("info", "close", v);
            } else {
                emit("ok", "close", obj());
            }
        } catch (Exception e) {
            ObjectNode v = obj();
            v.put("error", errorText(e));
            if (!already) emit("info", "close", v);
        }
        ObjectNode last = obj();
        last.put("n", n);
        last.put("cmd", "close");
        emit("ok", "step", last);
        System.exit(0);
    }

    /** The `ack` command: ShareAcknowledgment calls, then the consumer thread applies them; the last error or null. */
    static String ack(JsonNode command, Map<String, Handed> handed, Gate gate) throws InterruptedException {
        String error = null;
        List<Handed> queued = new ArrayList<>();
        List<AcknowledgeType> types = new ArrayList<>();
        for (JsonNode r : command.path("records")) {
            String type = r.get("type").asText();
            Handed h = handed.get(key(r.get("topic").asText(), r.get("partition").asInt(), r.get("offset").asLong()));
            try {
                if (h == null) throw new IllegalArgumentException("record was never returned by a poll");
                if (h.ack() == null) throw new IllegalStateException("the container gave no ShareAcknowledgment (not MANUAL)");
                switch (AcknowledgeType.valueOf(type)) {
                    case ACCEPT -> h.ack().acknowledge();
                    case RELEASE -> h.ack().release();
                    case REJECT -> h.ack().reject();
                    default -> h.ack().renew();  // RENEW (kafka-clients 4.2+)
                }
                queued.add(h);
                types.add(AcknowledgeType.valueOf(type));
            } catch (RuntimeException e) {  // e.g. IllegalStateException: already acknowledged (ShareConsumerAcknowledgment)
                error = errorText(e);
                failed(r.get("topic").asText(), r.get("partition").asInt(), r.get("offset").asLong(), type, error);
            }
        }
        if (queued.isEmpty()) return error;
        gate.nudge();  // the consumer thread applies queued acknowledgements at the top of its loop
        long deadline = System.nanoTime() + APPLY_TIMEOUT_MS * 1_000_000L;
        ObjectNode ok = obj();
        ArrayNode rs = ok.putArray("records");
        for (int i = 0; i < queued.size(); i++) {
            ConsumerRecord<byte[], byte[]> r = queued.get(i).record();
            Applied a = gate.awaitApplied(r, types.get(i), deadline);
            if (a == null) {  // queued in the container, not seen at the client: the outcome is unknown, not a refusal
                error = "the container did not apply it within " + APPLY_TIMEOUT_MS + " ms";
                ObjectNode err = obj();
                err.putNull("code");
                err.put("message", "ack " + r.topic() + "-" + r.partition() + "@" + r.offset() + ": " + error);
                emit("info", "error", err);
                continue;
            }
            if (a.error() != null) {  // KafkaShareConsumer.acknowledge refused it (the container only logged that)
                error = a.error();
                failed(r.topic(), r.partition(), r.offset(), types.get(i).name(), error);
                continue;
            }
            ObjectNode o = rs.addObject();
            o.put("topic", r.topic());
            o.put("partition", r.partition());
            o.put("offset", r.offset());
            o.put("type", types.get(i).name());
        }
        if (!rs.isEmpty()) emit("ok", "acknowledge", ok);
        return error;
    }

    /** kafka-clients' own version (kafka/kafka-version.properties in its jar; AppInfoParser moved to
     *  common.utils.internals in 4.4, so it is not called). */
    static String kafkaClientsVersion() {
        try (var in = ShareConsumer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            java.util.Properties p = new java.util.Properties();
            if (in != null) p.load(in);
            return p.getProperty("version", "unknown");
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }

    static void failed(String topic, int partition, long offset, String type, String error) {
        ObjectNode v = obj();
        ObjectNode one = v.putArray("records").addObject();
        one.put("topic", topic);
        one.put("partition", partition);
        one.put("offset", offset);
        one.put("type", type);
        v.put("error", error);
        emit("fail", "acknowledge", v);
    }
}
