"""What KIP-932 allows that a naive oracle would call a violation; each is named, sourced and counted.

A checker uses an allowance only when the history holds the events that make
the excused behaviour possible for THAT record, in the interval in which it
could have happened (`harness.checkers.evidence`), and counts every use with
those events' op indexes (`Result.allowances`, `Result.allowance_evidence`,
`verdict.json`, `share-harness tally`), so an allowance is never a silent pass.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Allowance:
    name: str
    applies: str
    kip: str  # the sentence of KIP-932 (../shared/seeds/000_*.txt) it rests on
    #: not a KIP allowance but a known bug of the releases whose model profile says so (fixed later);
    #: on a release without it the same situation is an anomaly
    known_bug: str = ""


ALLOWANCES = {a.name: a for a in (
    Allowance(
        "before-latest-start",
        "share.auto.offset.reset=latest or by_duration (the config operation says so): a record never delivered, "
        "produced before the first consumer started, whose offset "
        "is below the lowest offset its share-partition ever delivered, was below where the share-partition "
        "was initialized (the log end, or the first record within the duration). One produced after the first "
        "consumer started, below that offset (or on a share-partition that delivered nothing), may or may not "
        "be: the share-partition is initialized at its first share fetch, which the history does not show, so "
        "no-loss is unknown. Never on a partition added after the group began (`partitions-added`): KIP-932 "
        "starts those at offset 0",
        "By default, the SPSO for each share-partition is initialized to the latest offset for the "
        "corresponding topic-partitions."),
    Allowance(
        "acquired-lost-on-leader-change",
        "a record Acquired before or during a disruption (a fault whose effects include leader-change or "
        "coordinator-loss on its partition, from its start until its heal plus settle_ms) is delivered again "
        "while its previous acquisition lock would still be live; the window must overlap the interval from "
        "that acquisition to the new delivery. Evidence: the fault start",
        "The delivery counts are only maintained approximately and the Acquired state is not persisted. "
        "[...] In the unlikely event of a share-partition leader crash, memory of the in-flight delivery will be lost."),
    Allowance(
        "delivery-count-lag",
        "across such a disruption, a record's delivery count is lower than one more than its previous "
        "delivery, or a record delivered at the limit is delivered again; the window must overlap the interval "
        "from the previous delivery (the one at the limit) to the new one. Evidence: the fault start",
        "These updates are not performed with exactly-once semantics, so the delivery count cannot be relied "
        "upon to be precise in all situations."),
    Allowance(
        "unobserved-acquisition",
        "a record's delivery count rises by more than one, or a record never seen at the limit is terminal "
        "per a start-offset read, and each acquisition the history did not see has its own distinct cause that "
        "could have released it, taken one after another from when the record was free again (its previous "
        "lock's end, its RELEASE, or its owner's session end inside the lock; a record never delivered: its "
        "produce's invoke, no allowance if unknown): the session end (close, crash, a fault cutting its "
        "connections, a client error, never a driver's or the harness's own error; one per session) of a "
        "consumer that was live then, or (`-expired`) a whole lock duration; one event never explains two "
        "acquisitions, and the owner's session end that released the delivery the history saw explains none. "
        "Orderly closes after the drain count once together; on 4.1 a session end takes its acquisition back and "
        "counts nothing. Where __share_group_state was read, its writes must hold the record archived (a record "
        "in no write was skipped: `skipped`); where that read failed, the verdict is unknown. Evidence: the "
        "previous delivery or produce, each session end, the read",
        "Every time that a record is acquired by a consumer in a share group, its delivery count increments by 1."),
    Allowance(
        "unobserved-acquisition-disrupted",
        "as `unobserved-acquisition`, where (at least) one of the acquisitions the history did not see is "
        "explained by a disruption of the record's partition (a fault whose effects include leader-change or "
        "coordinator-loss, from its start until its heal plus settle_ms) overlapping the time from when the "
        "record was free again to the delivery that skipped counts; one disruption explains one acquisition: "
        "the in-flight acquisition a leader lost, or one a client fetched from the leader that moved and "
        "released without handing it over. Evidence: the previous delivery or produce, the fault start (and "
        "any other cause), the delivery",
        "The delivery counts are only maintained approximately and the Acquired state is not persisted. "
        "[...] In the unlikely event of a share-partition leader crash, memory of the in-flight delivery will be lost."),
    Allowance(
        "stamps-reordered",
        "a record delivered with a count that skips counts, then, stamped up to 500 ms later, delivered to "
        "another consumer with exactly the skipped counts: the polls were stamped out of order (the harness "
        "stamps a driver's line when it reads it, and a loaded host runs one driver or reader late), so the "
        "counts rose by one per acquisition after all; the record keeps the higher count. Evidence: both "
        "deliveries",
        "Every time that a record is acquired by a consumer in a share group, its delivery count increments by 1."),
    Allowance(
        "unobserved-acquisition-expired",
        "a record's delivery count rises by more than one without enough session ends, but at least one lock "
        "duration per remaining skipped acquisition passed after the record was free again (its previous lock's "
        "end, its RELEASE or its owner's session end; else its produce's invoke or the first consumer start, "
        "whichever is later): a live client acquired it, never handed it to the application (prefetched), "
        "and its lock elapsed. Not for a record never seen at the limit that ends terminal (a live client "
        "hands what it fetched to the application at its next poll)",
        "The consumer can do nothing, in which case the lock is automatically released when the lock duration "
        "has elapsed"),
    Allowance(
        "ack-lost-with-consumer",
        "an acknowledgement has no result because its consumer was killed, or its close did not finish, "
        "before the result arrived (and before the commit carrying it returned). Evidence: the "
        "acknowledgement, the crash",
        "The first consumer fetches records 100 to 109 inclusive and then crashes. [...] it gets records "
        "100 to 109 with their delivery counts set to 2 because they are being redelivered."),
    Allowance(
        "lost-to-unclean-election",
        "a record the log lost to an unclean leader election (a `truncated` operation with unclean=true) "
        "was delivered, or acknowledged, before it was lost",
        "unclean.leader.election.enable: Indicates whether to enable replicas not in the ISR set to be elected "
        "as leader as a last resort, even though doing so may result in data loss. (Kafka topic configs; "
        "KIP-932 builds on the log: 'Share groups [...] consume records from the partitions of the topics')"),
    Allowance(
        "skipped-after-unclean-election",
        "a record written at an offset an unclean leader election had emptied (a `truncated` operation with "
        "unclean=true took the record a consumer had been handed there) is never delivered while the "
        "group's start offset moves past it: the group's state for that offset belongs to the lost record. "
        "Evidence: its produce, the truncation",
        "unclean.leader.election.enable: Indicates whether to enable replicas not in the ISR set to be elected "
        "as leader as a last resort, even though doing so may result in data loss. (Kafka topic configs; "
        "KIP-932 keeps a share-partition's state by offset: 'The starting offset of records which are eligible "
        "for consumption is known as the share-partition start offset (SPSO)')"),
    Allowance(
        "dead-lettered-by-lost-leader",
        "a record delivered at the delivery-count limit is in the group's dead-letter queue as archived at "
        "the limit (every DLQ record of it says so) although the history shows it accepted, and a disruption "
        "of its partition (a fault whose effects include leader-change or coordinator-loss, until its heal "
        "plus settle_ms) overlaps its life from its produce's invoke (no allowance where that is unknown) to "
        "its last delivery: the leader that lost it "
        "archived it when its lock ran out (KIP-1191's write), while the new leader, to which that "
        "acquisition was lost, delivered it again. Evidence: the fault start, the last delivery, the DLQ read",
        "The delivery counts are only maintained approximately and the Acquired state is not persisted. "
        "[...] In the unlikely event of a share-partition leader crash, memory of the in-flight delivery will be lost."),
    Allowance(
        "redelivered-from-lost-leader",
        "a record whose ACCEPT or REJECT commit succeeded is handed to a consumer again, other than the one "
        "whose delivery was settled, whatever its count (the leader that lost the record counts on its own), no "
        "later than one lock duration (and the tolerance) after that delivery, and a disruption of its partition "
        "(a fault whose effects include leader-change or coordinator-loss, from its start until its heal plus "
        "settle_ms) overlaps the time from when the copy could have been acquired (one lock duration before that "
        "delivery, or the consumer's previous poll of the partition if later) to that delivery: the copy came "
        "from a leader that lost the record (before its failover, or resumed after it before it knew), and the "
        "new leader, which never knew of that acquisition, delivered the record to another consumer, whose "
        "acknowledgement was confirmed. Evidence: the fault start, the acknowledgement's result, the late "
        "hand-over",
        "The delivery counts are only maintained approximately and the Acquired state is not persisted. "
        "[...] In the unlikely event of a share-partition leader crash, memory of the in-flight delivery will be lost."),
    Allowance(
        "refusal-may-mask-landing",
        "an ACCEPT or REJECT whose result was a definitive refusal (not a transport error) keeps its record "
        "possibly settled, because a disruption of its partition (leader change, coordinator loss) or an end of "
        "its consumer's connections (a fault cutting them, a client error) falls between the acknowledgement "
        "and its result: a client retries an acknowledgement whose response it lost, and the retry of one that "
        "landed is refused (the record is no longer Acquired). Evidence: the acknowledgement, the disruption or "
        "connection end, the result",
        "When the share-partition leader receives a request to acknowledge delivery [...] it checks that the "
        "records being acknowledged are still in the Acquired state and acquired by the share group member "
        "trying to acknowledge them. [...] INVALID_RECORD_STATE - The record state is invalid. The "
        "acknowledgement of delivery could not be completed."),
    Allowance(
        "session-release-decrement",
        "a record whose acquisition ended with its consumer's share session (close, crash, a fault cutting "
        "its connections, a client error) is delivered again with the same delivery count as that "
        "acquisition, also at the limit (it was not archived). Evidence: the previous delivery, the new one",
        "",
        known_bug="Kafka 4.1.x: a share session's end releases its records with the delivery count decreased "
                  "by one (DeliveryCountOps.DECREASE, KAFKA-17541) and never archives them at the limit, "
                  "where KIP-932 says 'Every time that a record is acquired by a consumer in a share group, "
                  "its delivery count increments by 1'; fixed in 4.2.0 (KAFKA-19972)"),
    Allowance(
        "state-start-offset-regressed",
        "a record the history proves accepted or rejected is not terminal in __share_group_state, and lies "
        "below a start offset the state topic held earlier (no admin reset moved it): the start went back; "
        "or such a record is delivered again (its count restarting) and the state topic's writes show the "
        "start offset going back over it",
        "",
        known_bug="Kafka up to 4.3.x: ShareCoordinatorShard takes a write's start offset even when lower than "
                  "the stored one, so out-of-order writes regress it (records accepted below it would be "
                  "delivered again after a leader change); 4.4.0 keeps the higher one (Math.max)"),
)}
