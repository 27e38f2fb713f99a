// The Java KafkaShareConsumer driver (kafka-clients of the release under test), step mode of
// docs/driver.md: runs one JSON command per stdin line and prints JSON operations on stdout.
// Usage: java -cp <kafka libs>:<dir> ShareDriver '<json config>'
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ShareDriver {
    static final ObjectMapper JSON = new ObjectMapper();

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

    public static void main(String[] args) throws Exception {
        JsonNode config = JSON.readTree(args[0]);
        if (!"step".equals(config.path("behaviour").asText())) {
            System.err.println("unknown behaviour " + config.path("behaviour") + ": this driver runs step only");
            System.exit(2);
        }
        String modeAsked = config.path("mode").asText("explicit");
        boolean explicit = !"implicit".equals(modeAsked) && !"default".equals(modeAsked);
        Properties props = new Properties();
        props.put("bootstrap.servers", config.get("bootstrap").asText());
        props.put("group.id", config.get("group").asText());
        if (!"default".equals(modeAsked)) {  // contract 3: "default" sets no mode (documented implicit)
            props.put("share.acknowledgement.mode", explicit ? "explicit" : "implicit");
        }
        Iterator<Map.Entry<String, JsonNode>> extra = config.path("client_config").fields();
        ArrayNode ignored = JSON.createArrayNode();  // properties KafkaShareConsumer has no config of (it only logs them)
        Set<String> known = org.apache.kafka.clients.consumer.ConsumerConfig.configNames();
        while (extra.hasNext()) {
            Map.Entry<String, JsonNode> e = extra.next();
            props.put(e.getKey(), e.getValue().asText());
            if (!known.contains(e.getKey())) ignored.add(e.getKey());
        }
        KafkaShareConsumer<byte[], byte[]> consumer;
        try {
            consumer = new KafkaShareConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        } catch (KafkaException | IllegalArgumentException e) {  // contract 4: a refused configuration is a result
            ObjectNode refused = obj();
            refused.put("client", "kafka-clients");
            refused.put("client_version", config.path("client_version").asText("unknown"));
            refused.put("contract", 4);
            refused.put("error", errorText(e));
            emit("fail", "start", refused);
            return;
        }
        consumer.setAcknowledgementCommitCallback((Map<TopicIdPartition, Set<Long>> offsets, Exception exc) -> {
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
        });
        List<String> topics = new ArrayList<>();
        config.get("topics").forEach(t -> topics.add(t.asText()));
        if (!topics.isEmpty()) consumer.subscribe(topics);  // none: no subscribe() call at all (subscription())
        ObjectNode start = obj();
        start.put("client", "kafka-clients");
        start.put("client_version", config.path("client_version").asText("unknown"));  // the jar's release
        start.put("behaviour", "step");
        start.put("mode", explicit ? "explicit" : ("default".equals(modeAsked) ? "default" : "implicit"));
        start.put("contract", 4);  // docs/driver.md
        start.set("ignored_config", ignored);
        emit("ok", "start", start);

        Map<String, ConsumerRecord<byte[], byte[]>> given = new HashMap<>();
        List<ConsumerRecord<byte[], byte[]>> unacked = new ArrayList<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        int n = 0;
        String line;
        String cmd = null;
        JsonNode closeTimeout = null;
        boolean closed = false;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            n++;
            ObjectNode reply = obj();
            reply.put("n", n);
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
            if (!explicit && !unacked.isEmpty() && (cmd.startsWith("poll") || cmd.startsWith("commit"))) {
                emit("ok", "acknowledge", records(unacked, "ACCEPT"));
                unacked.clear();
            }
            if (cmd.equals("close")) {
                closeTimeout = command.get("timeout");  // contract 3: null: close(); absent: close(30 s)
                if (closeTimeout != null && !closeTimeout.isNull() && closeTimeout.asDouble() < 0) {
                    // The library must refuse it (IllegalArgumentException) before doing anything: then nothing is
                    // recorded (a `close` invoke would tell the checkers the consumer was closing) and it stays open.
                    try {
                        consumer.close(duration(closeTimeout.asDouble()));
                        emit("invoke", "close", obj());  // taken: it did close (the invoke printed after the fact)
                        emit("ok", "close", obj());
                        closed = true;
                        break;
                    } catch (IllegalArgumentException e) {
                        closeTimeout = null;  // the close at the end of input is the driver's own
                        reply.put("error", errorText(e));
                        emit("ok", "step", reply);
                        continue;
                    } catch (Exception e) {  // taken, and it failed: what close() does after a failure is unknown
                        emit("invoke", "close", obj());
                        ObjectNode v = obj();
                        v.put("error", errorText(e));
                        emit("info", "close", v);
                        closed = true;
                        break;
                    }
                }
                break;
            }
            try {
                switch (cmd) {
                    case "poll": {
                        List<ConsumerRecord<byte[], byte[]>> batch = poll(consumer, command.path("timeout").asDouble(5.0));
                        for (ConsumerRecord<byte[], byte[]> r : batch) given.put(key(r.topic(), r.partition(), r.offset()), r);
                        if (!explicit) unacked.addAll(batch);
                        reply.put("records", batch.size());
                        break;
                    }
                    case "ack": {
                        String error = null;
                        List<ConsumerRecord<byte[], byte[]>> done = new ArrayList<>();
                        List<String> types = new ArrayList<>();
                        for (JsonNode r : command.path("records")) {
                            boolean typed = r.hasNonNull("type");  // contract 3: none: acknowledge(record), ACCEPT
                            String type = typed ? r.get("type").asText() : "ACCEPT";
                            ConsumerRecord<byte[], byte[]> rec =
                                given.get(key(r.get("topic").asText(), r.get("partition").asInt(), r.get("offset").asLong()));
                            try {
                                if (rec == null) throw new IllegalArgumentException("record was never returned by a poll");
                                if (typed) {
                                    consumer.acknowledge(rec, AcknowledgeType.valueOf(type));
                                } else {
                                    consumer.acknowledge(rec);
                                }
                                done.add(rec);
                                types.add(type);
                            } catch (Exception e) {
                                error = errorText(e);
                                ObjectNode v = obj();
                                ArrayNode rs = v.putArray("records");
                                ObjectNode one = rs.addObject();
                                one.put("topic", r.get("topic").asText());
                                one.put("partition", r.get("partition").asInt());
                                one.put("offset", r.get("offset").asLong());
                                one.put("type", type);
                                v.put("error", error);
                                emit("fail", "acknowledge", v);
                            }
                        }
                        if (!done.isEmpty()) emit("ok", "acknowledge", records(done, types));
                        reply.put("error", error);
                        break;
                    }
                    case "commit_sync": {
                        JsonNode t = command.get("timeout");  // contract 3: null: commitSync(); absent: 30 s
                        emit("invoke", "commit", obj());
                        try {
                            Map<TopicIdPartition, Optional<KafkaException>> results = t == null
                                ? consumer.commitSync(Duration.ofSeconds(30))
                                : t.isNull() ? consumer.commitSync() : consumer.commitSync(duration(t.asDouble()));
                            ObjectNode v = obj();
                            ArrayNode rs = v.putArray("results");
                            for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : results.entrySet()) {
                                ObjectNode r = rs.addObject();
                                r.put("topic", e.getKey().topic());
                                r.put("partition", e.getKey().partition());
                                r.put("error", e.getValue().map(ShareDriver::errorText).orElse(null));
                            }
                            emit("ok", "commit", v);
                        } catch (KafkaException e) {
                            ObjectNode v = obj();
                            v.put("error", errorText(e));
                            emit("info", "commit", v);
                        } catch (IllegalArgumentException e) {  // refused before anything was sent (a negative timeout)
                            ObjectNode v = obj();
                            v.put("error", errorText(e));
                            emit("fail", "commit", v);
                            reply.put("error", errorText(e));
                        }
                        break;
                    }
                    case "poll_once": {  // contract 3: one library call, timed
                        long began = System.nanoTime();
                        List<ConsumerRecord<byte[], byte[]>> batch = new ArrayList<>();
                        Waker waker = command.has("wakeup_after")  // contract 4: wakeup() from a second thread
                            ? new Waker(consumer::wakeup, command.get("wakeup_after").asDouble()) : null;
                        Thread polling = Thread.currentThread();
                        Waker interrupter = command.has("interrupt_after")  // contract 4: this thread interrupted
                            ? new Waker(polling::interrupt, command.get("interrupt_after").asDouble()) : null;
                        try {
                            consumer.poll(duration(command.path("timeout").asDouble(1.0))).forEach(batch::add);
                        } finally {
                            reply.put("elapsed_ms", (System.nanoTime() - began) / 1_000_000);
                            if (waker != null) reply.put("wakeup_sent", waker.stop());
                            if (interrupter != null) {
                                reply.put("interrupt_sent", interrupter.stop());
                                Thread.interrupted();  // InterruptException sets the flag again: the next call is not to see it
                            }
                        }
                        emitPoll(batch);
                        for (ConsumerRecord<byte[], byte[]> r : batch) given.put(key(r.topic(), r.partition(), r.offset()), r);
                        if (!explicit) unacked.addAll(batch);
                        reply.put("records", batch.size());
                        break;
                    }
                    case "commit_async": {
                        ObjectNode async = obj();
                        async.put("async", true);  // no result here: the callback brings it
                        emit("invoke", "commit", async);
                        consumer.commitAsync();
                        break;
                    }
                    case "unsubscribe":  // contract 2
                        consumer.unsubscribe();
                        break;
                    case "subscribe": {  // contract 3
                        List<String> to = new ArrayList<>();
                        command.path("topics").forEach(t -> to.add(t.isNull() ? null : t.asText()));
                        consumer.subscribe(to);
                        break;
                    }
                    case "wakeup":  // contract 3: from the driver's own thread, no call blocking
                        consumer.wakeup();
                        break;
                    case "lock_timeout": {  // contract 3: acquisitionLockTimeoutMs() (kafka-clients 4.2+, by reflection)
                        Object found = consumer.getClass().getMethod("acquisitionLockTimeoutMs").invoke(consumer);
                        Optional<?> ms = (Optional<?>) found;
                        if (ms.isPresent()) reply.put("ms", ((Number) ms.get()).longValue());
                        else reply.putNull("ms");
                        break;
                    }
                    case "poll_concurrent": {  // contract 4: poll(S) here while a second thread calls subscription()
                        // KafkaShareConsumer.poll is synchronized (a second poll would wait its turn): the second thread
                        // calls subscription(), unsynchronized, again and again until this poll returns or one raises
                        double seconds = command.path("timeout").asDouble(2.0);
                        String[] second = new String[1];
                        java.util.concurrent.atomic.AtomicBoolean polling = new java.util.concurrent.atomic.AtomicBoolean(true);
                        java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(1);
                        KafkaShareConsumer<byte[], byte[]> shared = consumer;
                        Thread other = new Thread(() -> {
                            started.countDown();
                            try {
                                while (polling.get()) {
                                    shared.subscription();
                                    Thread.onSpinWait();
                                }
                            } catch (Exception e) {
                                second[0] = errorText(e);
                            }
                        }, "driver-second-caller");
                        other.start();
                        started.await();
                        String first = null;
                        try {
                            emitPoll(pollOnce(consumer, seconds, given, explicit ? null : unacked));
                        } catch (Exception e) {
                            first = errorText(e);
                        } finally {
                            polling.set(false);
                            other.join();
                        }
                        ArrayNode errors = reply.putArray("errors");
                        errors.add(first);
                        errors.add(second[0]);
                        break;
                    }
                    case "client_instance_id": {  // contract 4: clientInstanceId(Duration), timed
                        long began = System.nanoTime();
                        try {
                            Uuid id = consumer.clientInstanceId(duration(command.path("timeout").asDouble(1.0)));
                            if (id == null) reply.putNull("id");
                            else reply.put("id", id.toString());
                        } finally {
                            reply.put("elapsed_ms", (System.nanoTime() - began) / 1_000_000);
                        }
                        break;
                    }
                    case "subscription": {  // contract 3
                        ArrayNode ts = reply.putArray("topics");
                        consumer.subscription().stream().sorted().forEach(ts::add);
                        break;
                    }
                    default:
                        reply.put("error", "unknown command " + cmd);
                }
            } catch (Exception e) {  // e.g. IllegalStateException: a poll with records unacknowledged
                reply.put("error", errorText(e));
                ObjectNode err = obj();
                err.putNull("code");
                err.put("message", cmd + ": " + errorText(e));
                emit("info", "error", err);
            }
            emit("ok", "step", reply);
        }
        if (!closed) {
            emit("invoke", "close", obj());
            long began = System.nanoTime();
            try {
                long limitMs = 30_000;  // close(30 s) when none was given, and close()'s documented default
                if (closeTimeout == null) consumer.close(Duration.ofSeconds(30));
                else if (closeTimeout.isNull()) consumer.close();
                else {
                    Duration d = duration(closeTimeout.asDouble());
                    limitMs = d.toMillis();
                    consumer.close(d);
                }
                long tookMs = (System.nanoTime() - began) / 1_000_000;
                if (tookMs >= limitMs - 200) {
                    // contract 4: a close that ran out its timeout was force closed (the Javadoc: "If the consumer is
                    // unable to complete acknowledgements [...] before the timeout expires, the consumer is force
                    // closed"): what it left uncompleted is unknown, so the close is `info`, never `ok`
                    ObjectNode v = obj();
                    v.put("error", "force closed: close returned after " + tookMs + " ms, its timeout " + limitMs + " ms");
                    emit("info", "close", v);
                } else {
                    emit("ok", "close", obj());
                }
            } catch (Exception e) {
                ObjectNode v = obj();
                v.put("error", errorText(e));
                emit("info", "close", v);
            }
        }
        ObjectNode last = obj();
        last.put("n", n);
        last.put("cmd", "close");
        emit("ok", "step", last);
    }

    static List<ConsumerRecord<byte[], byte[]>> poll(KafkaShareConsumer<byte[], byte[]> consumer, double timeout) {
        long deadline = System.nanoTime() + (long) (timeout * 1e9);
        while (true) {
            long left = Math.max(50, Math.min((deadline - System.nanoTime()) / 1_000_000, 500));
            List<ConsumerRecord<byte[], byte[]>> batch = new ArrayList<>();
            consumer.poll(Duration.ofMillis(left)).forEach(batch::add);
            if (!batch.isEmpty()) {
                emitPoll(batch);
                return batch;
            }
            if (System.nanoTime() >= deadline) return batch;
        }
    }

    /** One poll of `seconds` (its records remembered as the poll command's are). */
    static List<ConsumerRecord<byte[], byte[]>> pollOnce(KafkaShareConsumer<byte[], byte[]> consumer, double seconds,
            Map<String, ConsumerRecord<byte[], byte[]>> given, List<ConsumerRecord<byte[], byte[]>> unacked) {
        List<ConsumerRecord<byte[], byte[]>> batch = new ArrayList<>();
        consumer.poll(duration(seconds)).forEach(batch::add);
        for (ConsumerRecord<byte[], byte[]> r : batch) given.put(key(r.topic(), r.partition(), r.offset()), r);
        if (unacked != null) unacked.addAll(batch);
        return batch;
    }

    /** Runs `action` (wakeup(), or interrupting the polling thread) on a thread of its own `seconds` after it was
     * made, unless stopped first. */
    static final class Waker {
        final Thread thread;
        volatile boolean sent;

        Waker(Runnable action, double seconds) {
            thread = new Thread(() -> {
                try {
                    Thread.sleep((long) (seconds * 1000));
                } catch (InterruptedException e) {
                    return;  // the call ended first: nothing left pending for the next one
                }
                sent = true;
                action.run();
            }, "driver-waker");
            thread.setDaemon(true);
            thread.start();
        }

        /** Stops the thread (if it has not called wakeup() yet); whether it did. */
        boolean stop() {
            thread.interrupt();
            while (true) {
                try {
                    thread.join();
                    return sent;
                } catch (InterruptedException e) {
                    // the waker interrupted this thread on its way out: keep waiting (the caller clears the flag)
                }
            }
        }
    }

    /** `seconds` as a Duration, rounded down to the millisecond (a negative one stays negative). */
    static Duration duration(double seconds) {
        return Duration.ofMillis((long) Math.floor(seconds * 1000));
    }

    /** The `poll` op of a batch with records (nothing for an empty one). */
    static void emitPoll(List<ConsumerRecord<byte[], byte[]>> batch) {
        if (batch.isEmpty()) return;
        ObjectNode v = obj();
        ArrayNode rs = v.putArray("records");
        for (ConsumerRecord<byte[], byte[]> r : batch) {
            ObjectNode o = rs.addObject();
            o.put("id", r.value() == null ? "" : new String(r.value(), StandardCharsets.UTF_8));
            o.put("topic", r.topic());
            o.put("partition", r.partition());
            o.put("offset", r.offset());
            o.put("delivery_count", r.deliveryCount().map(Short::intValue).orElse(-1));
        }
        emit("ok", "poll", v);
    }

    static ObjectNode records(List<ConsumerRecord<byte[], byte[]>> recs, String type) {
        List<String> types = new ArrayList<>();
        for (int i = 0; i < recs.size(); i++) types.add(type);
        return records(recs, types);
    }

    static ObjectNode records(List<ConsumerRecord<byte[], byte[]>> recs, List<String> types) {
        ObjectNode v = obj();
        ArrayNode rs = v.putArray("records");
        for (int i = 0; i < recs.size(); i++) {
            ConsumerRecord<byte[], byte[]> r = recs.get(i);
            ObjectNode o = rs.addObject();
            o.put("topic", r.topic());
            o.put("partition", r.partition());
            o.put("offset", r.offset());
            o.put("type", types.get(i));
        }
        return v;
    }
}
