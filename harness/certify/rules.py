"""The client rules a share-consumer library is certified against (`share-harness certify`).

Each conformance test that decides a rule carries `pytest.mark.rule(id)`; a spec's `rules` names a
subset to run. Kept apart from `harness.certify.certificate` so the spec can validate rule ids without it.

Every rule rests on a sentence it cites: KIP-932's (or a follow-up KIP's), or a named client-API
contract. A contract that is one library's API rather than the KIP's (`Rule.feature`) binds only a
driver that declares the feature: a library without it "does not support" the rule, it does not fail
it (e.g. KafkaShareConsumer's `share.acknowledgement.mode` setting: franz-go has no modes).
"""

from __future__ import annotations

from dataclasses import dataclass

#: KIP-932's text (the wiki page; `../shared/seeds/000_*.txt` is the copy its sentences were read from).
KIP932 = "KIP-932"
#: KafkaShareConsumer's Javadoc, kafka-clients 4.3.1 (the release's own statement of the client API).
JAVA_API = "KafkaShareConsumer Javadoc (kafka-clients 4.3.1)"


@dataclass(frozen=True)
class Rule:
    """A client rule: what a conforming client does, the sentence it rests on and where that sentence is."""

    statement: str
    source: str  # KIP932, "KIP-1222", ..., or JAVA_API
    sentence: str  # quoted from `source`
    #: a client-API contract a library may declare (a driver feature, harness.clients.registry.FEATURES):
    #: a driver without it is "not supported" on this rule; "" for a rule every library is held to
    feature: str = ""

    @property
    def basis(self) -> str:
        """The rule's citation, one line: source and sentence."""
        return f"{self.source}: \"{self.sentence}\""


#: The client rules, in certificate order: id -> rule.
CLIENT_RULES: dict[str, Rule] = {
    "ack-accept": Rule(
        "ACCEPT, once committed, is final: the record is never delivered again", KIP932,
        "The consumer then processes the records and acknowledges their consumption. The delivery attempt "
        "completes successfully and the records move into Acknowledged state."),
    "ack-release": Rule(
        "RELEASE makes the record available again, delivered with the next delivery count", KIP932,
        "The consumer can release the record, which makes the record available for another delivery attempt"),
    "ack-reject": Rule(
        "REJECT archives the record: it is never delivered again", KIP932,
        "The consumer can reject the record, which indicates that the record is unprocessable and does not make "
        "the record available for another delivery attempt"),
    "ack-renew": Rule(
        "RENEW extends the acquisition lock: the renewed record goes to no other consumer past its lock, and its "
        "holder can still accept it", "KIP-1222, as AcknowledgeType.RENEW's Javadoc (kafka-clients 4.3.1) states it",
        "The record is still being processed. Renew the acquisition lock so processing can continue."),
    "renew-hand-back": Rule(
        "A renewed record is returned again by the next poll, with the same delivery count", JAVA_API,
        "When a record is renewed successfully, it is returned again by the poll(Duration) call.",
        feature="renew_hand_back"),
    "implicit-mode": Rule(
        "In implicit mode the next poll or commit accepts the whole previous batch", KIP932,
        "The application calls KafkaShareConsumer.poll(Duration) without committing, which also implicitly "
        "acknowledges all of the delivered records and commits the acknowledgements to Kafka asynchronously."),
    "unacked-stay-acquired": Rule(
        "In explicit mode a record the application did not acknowledge stays acquired: the client does not "
        "acknowledge it by itself, and the application can still acknowledge it", KIP932,
        "If any records in the batch were not acknowledged, they remain acquired and will be presented to the "
        "application in response to a future poll."),
    "no-mixing": Rule(
        "An implicit-mode consumer refuses acknowledge()", JAVA_API,
        "@throws IllegalStateException if the record is not waiting to be acknowledged, or the consumer has "
        "already used implicit acknowledgement", feature="ack_mode_setting"),
    "close-commits-pending": Rule(
        "close() commits the acknowledgements still pending: the broker settles records ACCEPTed and never "
        "committed once close() returned", KIP932,
        "The application calls KafkaShareConsumer.close() which attempts to commit any pending acknowledgements "
        "and releases any remaining acquired records."),
    "explicit-poll-commits": Rule(
        "In explicit mode the next poll commits the acknowledgements made since the last commit, and the callback "
        "reports their results", JAVA_API,
        "Calling poll(Duration) after it has acknowledged all records, which commits the acknowledgements to "
        "Kafka asynchronously."),
    "implicit-commit-async": Rule(
        "In implicit mode commitAsync accepts every record the last poll returned and commits it", JAVA_API,
        "If the consumer is using implicit acknowledgement, all the records returned by the latest call to "
        "poll(Duration) are acknowledged.", feature="implicit_batch_held"),
    "implicit-close-releases": Rule(
        "In implicit mode close() releases the last batch without acknowledging it: it goes to another consumer "
        "with the next delivery count", JAVA_API,
        "Calling close() which releases any acquired records without acknowledgement.",
        feature="implicit_batch_held"),
    "explicit-poll-refused": Rule(
        "In explicit mode a poll while records of the previous batch are unacknowledged is refused "
        "(IllegalStateException) and hands out nothing", JAVA_API,
        "If the application calls poll(Duration) without having acknowledged all records, an "
        "IllegalStateException is thrown.", feature="ack_mode_setting"),
    "ack-after-commit-refused": Rule(
        "An acknowledgement of a record whose acknowledgement was already committed is refused, and nothing is "
        "sent: the record is never delivered again", JAVA_API,
        "@throws IllegalStateException if the record is not waiting to be acknowledged, or the consumer is not "
        "using explicit acknowledgement"),
    "renew-implicit-refused": Rule(
        "An implicit-mode consumer refuses RENEW (nothing is sent) and its next poll accepts the whole batch",
        "KafkaShareConsumer Javadoc (kafka-clients 4.3.1), renewal; KIP-1222",
        "The application must be using explicit acknowledgement. [KIP-1222:] In implicit mode, the "
        "acknowledgement type is fixed to ACCEPT.", feature="ack_mode_setting"),
    "renew-callback": Rule(
        "A RENEW committed with commitAsync is reported by the acknowledgement commit callback, without error",
        JAVA_API, "An acknowledgement commit callback can be used to observe the completion of the "
        "acknowledgements."),
    "joins-on-poll": Rule(
        "A subscribed consumer is a member of the group once it polls (within 10 s), and stays one while it polls",
        JAVA_API, "After subscribing to a set of topics, the consumer will automatically join the group when "
        "poll(Duration) is invoked."),
    "empty-commit-noop": Rule(
        "A commit with nothing acknowledged since the last does nothing: commitSync returns no result, commitAsync "
        "brings no callback", KIP932,
        "The call to KafkaShareConsumer.commitAsync() just does nothing because the batch was empty."),
    "stays-in-group": Rule(
        "A consumer that keeps polling stays the same member of the group past its session timeout and receives "
        "every record produced meanwhile", JAVA_API,
        "As long as you continue to call poll, the consumer will stay in the group and continue to receive records "
        "from the partitions it was assigned."),
    "unsubscribe-stops": Rule(
        "After unsubscribe() returned, the consumer is given no record of the topics it was subscribed to; another "
        "member of the group receives them", JAVA_API,
        "Unsubscribe from topics currently subscribed with subscribe(Collection).", feature="unsubscribe"),
    "subscription-echo": Rule(
        "subscription() names the topics of the most recent subscribe(), and none before any", JAVA_API,
        "Get the current subscription. Will return the same topics used in the most recent call to "
        "subscribe(Collection), or an empty set if no such call has been made.", feature="subscribe"),
    "subscribe-replaces": Rule(
        "subscribe() replaces the subscription: once subscribed to a second topic, the consumer is given its "
        "records and none of the first topic's produced after", JAVA_API,
        "Topic subscriptions are not incremental. This list will replace the current assignment, if there is one.",
        feature="subscribe"),
    "subscribe-empty-unsubscribes": Rule(
        "subscribe() with no topic is unsubscribe(): the consumer is given no record produced after; another "
        "member receives them", JAVA_API,
        "If the given list of topics is empty, it is treated the same as unsubscribe().", feature="subscribe"),
    "subscribe-invalid-refused": Rule(
        "subscribe() with an empty topic name is refused, and the subscription stays as it was", JAVA_API,
        "@throws IllegalArgumentException if topics is null or contains null or empty elements",
        feature="subscribe"),
    "default-ack-mode": Rule(
        "A consumer whose acknowledgement mode is not set acknowledges implicitly: the poll after a batch it did not "
        "acknowledge raises nothing and accepts that batch (the broker settles it)", JAVA_API,
        "If the application sets the property to \"implicit\" or does not set it at all, then the consumer is "
        "using implicit acknowledgement.", feature="mode_default"),
    "ack-default-accepts": Rule(
        "acknowledge(record) without a type accepts it: once committed, the record is settled and never delivered "
        "again", JAVA_API, "Acknowledge successful delivery of a record returned on the last poll(Duration) call.",
        feature="ack_default"),
    # A library contract (feature ack_by_offset): KafkaShareConsumer 4.2-4.4 takes its by-offset overload only for
    # a record whose delivery failed (ShareFetch.acknowledge(String, int, long, AcknowledgeType) looks the offset
    # up in the batch's ShareInFlightBatchException), the situation its Javadoc names; confluent-kafka's
    # acknowledge_offset is "otherwise equivalent" to acknowledge() for any record a poll returned.
    "ack-by-offset": Rule(
        "Acknowledging a record the last poll returned by topic, partition and offset acts as acknowledging the "
        "record: ACCEPT and REJECT are final, RELEASE redelivers it with the next delivery count", JAVA_API,
        "Acknowledge delivery of a record returned on the last poll(Duration) call indicating whether it was "
        "processed successfully. [...] It provides an alternative to acknowledge(ConsumerRecord, AcknowledgeType)",
        feature="ack_by_offset"),
    "ack-is-local": Rule(
        "acknowledge() only records the acknowledgement in the client: not followed by a poll, commit or close, it "
        "leaves the record acquired until its lock ends, when another consumer gets it", JAVA_API,
        "The calls to acknowledge(ConsumerRecord, AcknowledgeType) are simply updating local information in the "
        "consumer.", feature="ack_local"),
    "lock-timeout-reported": Rule(
        "acquisitionLockTimeoutMs() is unknown before any fetch and, once records were fetched, the group's "
        "acquisition lock duration", JAVA_API,
        "Returns the acquisition lock timeout for the last set of records fetched from the cluster. [...] @return "
        "The acquisition lock timeout in milliseconds, or Optional.empty() if the timeout is not known.",
        feature="lock_timeout"),
    "no-argument-overloads": Rule(
        "commitSync() and close() without a timeout do what their timed overloads do: commitSync() commits the "
        "acknowledgements (a result per partition, no error, settled by the broker), close() releases the records "
        "the consumer holds and leaves the group", JAVA_API,
        "Commit the acknowledgements for the records returned. [...] Close the consumer, waiting for up to the "
        "default timeout of 30 seconds for any needed cleanup.", feature="default_timeouts"),
    "poll-waits": Rule(
        "One poll returns as soon as records are available, well before its timeout, and with none available "
        "waits its whole timeout", JAVA_API,
        "This method returns immediately if there are records available. Otherwise, it will await the passed "
        "timeout.", feature="poll_once"),
    "negative-timeout-refused": Rule(
        "poll, commitSync and close refuse a negative timeout (IllegalArgumentException) and the consumer goes on "
        "as before", JAVA_API,
        "@throws IllegalArgumentException if the timeout value is negative [poll(Duration)] [...] if the timeout is "
        "negative [commitSync(Duration), close(Duration)]", feature="negative_timeout_refused"),
    "wakeup-next-call": Rule(
        "wakeup() with no call blocking makes the next poll or commitSync raise WakeupException; the call after "
        "works", JAVA_API,
        "If no thread is blocking in a method which can throw WakeupException, the next call to such a method will "
        "raise it instead.", feature="wakeup"),
    "wakeup-blocking-call": Rule(
        "wakeup() from another thread ends a poll blocking on an idle topic with WakeupException at once, long "
        "before its timeout; the poll after delivers", JAVA_API,
        "The thread which is blocking in an operation will throw WakeupException.", feature="wakeup_thread"),
    "client-instance-id": Rule(
        "clientInstanceId refuses a negative timeout (IllegalArgumentException) and, with telemetry disabled, any "
        "call (IllegalStateException); with telemetry enabled it waits at most its timeout, and not at all for zero",
        JAVA_API,
        "This method waits up to timeout for the consumer client to complete the request. Specifying a timeout of "
        "zero means do not wait for the initial request to complete if it hasn't already. [...] @throws "
        "IllegalArgumentException if the timeout is negative [...] @throws IllegalStateException if telemetry is "
        "not enabled", feature="client_instance_id"),
    "config-refused-or-inert": Rule(
        "The consumer settings a share group does not take (auto.offset.reset, enable.auto.commit, isolation.level, "
        "partition.assignment.strategy, interceptor.classes) are refused at construction, or taken with no effect "
        "on what the group delivers", KIP932,
        "The existing consumer configurations apply for share groups with the following exceptions: [...] "
        "auto.offset.reset: this is handled by a dynamic group configuration group.share.auto.offset.reset [...] "
        "isolation.level: this is handled by a dynamic group configuration group.share.isolation.level",
        feature="config_refusal"),
    "commit-sync-bounded": Rule(
        "commitSync(timeout) with the partition's leader cut off returns or raises once its timeout expires; healed, "
        "the next commitSync settles the acknowledgement", JAVA_API,
        "This is a synchronous commit and will block until either the commit succeeds, an unrecoverable error is "
        "encountered (in which case it is thrown to the caller), or the timeout expires.", feature="default_timeouts"),
    "close-bounded": Rule(
        "close(timeout) with the partition's leader cut off returns once its timeout expires (force closed)",
        JAVA_API,
        "If the consumer is unable to complete acknowledgements and gracefully leave the group before the timeout "
        "expires, the consumer is force closed.", feature="close_timeout"),
    "callback-disconnect": Rule(
        "An acknowledgement whose request was cut off by a dropped connection is reported to the callback as the "
        "dropped connection, or as the broker's answer to it sent again (success with the record settled, or a "
        "refusal); never as a server error no broker gave", JAVA_API,
        "DisconnectException if the broker disconnected before the request could be completed",
        feature="callback"),
    "interrupt-blocking-call": Rule(
        "Interrupting the thread blocked in poll ends the poll with InterruptException, long before its timeout; the "
        "poll after delivers", JAVA_API,
        "@throws InterruptException if the calling thread is interrupted before or while this method is called",
        feature="interrupt_thread"),
    "thread-guard": Rule(
        "A second thread calling the consumer while a poll blocks: one of the calls is refused with "
        "ConcurrentModificationException",
        JAVA_API,
        "It is not thread-safe and only one thread at a time may called the methods of KafkaShareConsumer. "
        "Unsynchronized access will result in ConcurrentModificationException.", feature="thread_guard"),
    "callback-authorization": Rule(
        "An acknowledgement sent after READ on its topic was revoked is reported to the callback as an authorization "
        "error, never as success", JAVA_API,
        "AuthorizationException if not authorized to the topic or group", feature="callback"),
    "renew-ends-on-disconnect": Rule(
        "A renewed record whose holder's connection to the leader drops is delivered again, with the next delivery "
        "count, long before its renewed lock would end", "KIP-1222",
        "If the leadership of the partition for a record being delivered changes or the application's connection to "
        "the leader broker is disconnected, the current delivery attempt ends.", feature="ack:RENEW"),
    "groups-independent": Rule(
        "Share groups and consumer groups consume one topic independently: a second share group and a consumer "
        "group each receive every record the first share group consumed", JAVA_API,
        "You can have multiple share groups and consumer groups independently consuming from the same topics."),
    "ack-order": Rule(
        "Acknowledgements are made in the order the records were returned", KIP932,
        "The calls to KafkaShareConsumer.acknowledge(ConsumerRecord, AcknowledgeType) must be issued in the order "
        "in which the records appear in the ConsumerRecords object, which will be in order of increasing offset "
        "for each share-partition."),
    "ack-only-given": Rule(
        "A client acknowledges only records it handed to the application", KIP932,
        "it checks that the records being acknowledged are still in the Acquired state and acquired by the share "
        "group member trying to acknowledge them"),
    "every-record-handed": Rule(
        "Every record the client acquires is handed to the application", KIP932,
        "Then the KafkaShareConsumer keeps a map of the state of the records it has fetched and returns a batch to "
        "the application."),
    # Only a copy whose lock had run out by the client's own clock fails it. A copy kept from a leader that then
    # failed over, handed over after another consumer's ACCEPT on the new leader, does not: KIP-932, "In the
    # unlikely event of a share-partition leader crash, memory of the in-flight delivery will be lost" (the
    # client cannot know; the model counts it as redelivered-from-lost-leader; issue 46 item 9)
    "no-stale-records": Rule(
        "A poll hands out only records still acquired for this consumer: not a buffered record whose lock "
        "expired and which another consumer now holds", KIP932,
        "It returns a set of in-flight records acquired for this consumer for the duration of the acquisition "
        "lock timeout."),
    "commit-sync-results": Rule(
        "commitSync returns a result per share-partition", KIP932,
        "If the application uses KafkaShareConsumer.commitSync() to commit its acknowledgements, the results of "
        "the acknowledgements is returned to the application"),
    "commit-async-callback": Rule(
        "commitAsync's results arrive through the acknowledgement commit callback", KIP932,
        "If the application uses KafkaShareConsumer.commitAsync() or KafkaShareConsumer.poll(Duration) to commit "
        "its acknowledgements, the results of the acknowledgements are only delivered if there is an acknowledge "
        "commit callback registered."),
    "poll-swallows-commit-failure": Rule(
        "A poll that commits acknowledgements the broker refuses throws nothing (implicit and explicit mode); the "
        "refusal reaches the acknowledgement commit callback", JAVA_API,
        "In this case, no exception is thrown by a failure to commit the acknowledgements.", feature="callback"),
    "close-continues-after-failure": Rule(
        "close() whose commit of pending acknowledgements fails still leaves the group; an error it reports is that "
        "first failure", JAVA_API,
        "This close operation will attempt all shutdown steps even if one of them fails. It logs all encountered "
        "errors, continues to execute the next steps, and finally throws the first error found."),
    "delivery-count": Rule(
        "The delivery count is exposed: 1, 2, ... per acquisition, up to the limit", KIP932,
        "Every time that a record is acquired by a consumer in a share group, its delivery count increments by 1. "
        "The first time a record is acquired, its delivery count is 1."),
    "batch-order": Rule(
        "A batch holds a share-partition's records in increasing offset order", KIP932,
        "in the order in which the records appear in the ConsumerRecords object, which will be in order of "
        "increasing offset for each share-partition"),
    "close-releases": Rule(
        "close() releases the records the consumer still holds", KIP932,
        "The application calls KafkaShareConsumer.close() which attempts to commit any pending acknowledgements "
        "and releases any remaining acquired records."),
    "close-leaves": Rule(
        "close() leaves the group: once it returned, the member is gone from the group", KIP932,
        "This method waits up to {@code timeout} for the consumer to complete acknowledgements and leave the "
        "group."),
    "ack-expired-fails": Rule(
        "Acknowledging a record whose lock expired fails", KIP932,
        "If a record had reached its acquisition lock timeout and reverted to Available state, the attempt to "
        "acknowledge it will fail"),
    "lock-expiry": Rule(
        "A record held past its lock goes to another consumer", KIP932,
        "The idea is that the lock is automatically released once the lock duration has elapsed, and then the "
        "record is available to be given to another consumer."),
    "shared-partition": Rule(
        "Several consumers of one partition all make progress", KIP932,
        "The consumers in a share group cooperatively consume records with partitions that may be assigned to "
        "multiple consumers"),
    "session-timeout": Rule(
        "A member that stops heartbeating is removed and its records move", KIP932,
        "If it does not heartbeat at least once within the group.share.session.timeout.ms, the group coordinator "
        "will remove the member from the group."),
    "acquire-mode": Rule(
        "share.acquire.mode=record_limit caps each poll at max.poll.records",
        "KIP-1206, as ConsumerConfig's share.acquire.mode doc (kafka-clients 4.3.1) states it",
        "If set to record_limit, the number of records returned in each poll() will not exceed the value of "
        "max.poll.records.", feature="acquire_mode"),
    "record-limit-no-prefetch": Rule(
        "In record_limit mode a consumer acquires no more records than a poll returns: what its poll did not "
        "return goes at once to another consumer, with delivery count 1", JAVA_API,
        "If the application sets the property to \"record_limit\", the share consumer fetches no more than "
        "max.poll.records records at a time and does not prefetch.", feature="acquire_mode"),
    "rack-id": Rule(
        "client.rack reaches the group: the member's description carries it (KIP-1227)",
        "KIP-1227, as kafka-clients 4.3.1 states it (CommonClientConfigs.CLIENT_RACK_DOC; "
        "ShareMemberDescription.rackId())",
        "client.rack: A rack identifier for this client. [...] ShareMemberDescription.rackId(): The rack id of the "
        "group member.", feature="rack_id"),
    "poll-authorization": Rule(
        "Without READ on the share group or on the topic the consumer is refused with the authorization error "
        "and given no record; granted both, it consumes every record", JAVA_API,
        "@throws AuthorizationException if caller lacks Read access to any of the subscribed topics or to the "
        "share group."),
    "poll-authentication": Rule(
        "A consumer whose credentials the broker refuses is refused at poll with an authentication error and "
        "given no record", JAVA_API, "@throws AuthenticationException if authentication fails."),
    "poll-not-subscribed": Rule(
        "A consumer subscribed to no topic is told so at poll (IllegalStateException) and given no record",
        JAVA_API, "@throws IllegalStateException if the consumer is not subscribed to any topics",
        feature="subscribe_none"),
    "max-poll-interval-leaves": Rule(
        "A consumer that stops polling for longer than max.poll.interval.ms leaves the group by itself, well "
        "before the group's session timeout", JAVA_API,
        "If you don't call poll at least as frequently as this, the client will proactively leave the share "
        "group."),
    "poll-invalid-topic": Rule(
        "A consumer subscribed to a topic name Kafka does not allow is refused at poll with the invalid-topic error "
        "and given no record", JAVA_API,
        "@throws InvalidTopicException if the current subscription contains any invalid topic"),
    "new-partitions-consumed": Rule(
        "Partitions added to a subscribed topic are consumed: every record produced to them is delivered, from "
        "offset 0 (share.auto.offset.reset=earliest; under latest the 4.1 to 4.3 brokers deviate)", JAVA_API,
        "The group will automatically detect the new partitions through periodic metadata refreshes and assign "
        "them to the members of the group."),
    "reject-dead-letters": Rule(
        "With a dead-letter queue, a REJECTed record and one archived at the delivery-count limit are written "
        "to it once, with their context; an accepted one never (Kafka 4.4+)", "KIP-1191",
        "These undeliverable records are candidates for placing on a dead-letter queue (DLQ) topic for inspection "
        "or special processing, as opposed to simply being put directly into the Archived state as described in "
        "KIP-932."),
    "chaos-at-least-once": Rule(
        "At-least-once through leader failover and share-coordinator loss: every record produced is delivered "
        "and accepted (no-loss)", KIP932,
        "By limiting the duration of the acquisition lock and automatically releasing the locks, the broker "
        "ensures delivery progresses even in the presence of consumer failures."),
    "chaos-no-redelivery-after-ack": Rule(
        "Through the same faults, a record whose ACCEPT the broker confirmed is not handed to the application "
        "again (no-redelivery-after-ack)", KIP932,
        "The delivery attempt completes successfully and the records move into Acknowledged state."),
}

#: id -> statement, in certificate order (what the spec and the CLI validate rule ids against).
RULES: dict[str, str] = {rule_id: rule.statement for rule_id, rule in CLIENT_RULES.items()}
