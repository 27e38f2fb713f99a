"""Client-contract rules derived from docs/client-contract.md's gaps (issue 49): sentences of the
KafkaShareConsumer Javadoc and KIP-932 that no rule decided, each now a rule run with today's driver commands.
Each rule's sentence is in harness/certify/rules.py; the row it closes is named in each test."""

import time

import pytest

from harness.checkers.ack_results import definitive
from harness.conformance import precondition
from harness.conformance.consumer import LATE_AFTER_LOCK_S
from harness.sys.wait import WaitTimeout, wait_until

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.kip("client")]


def _callbacks(s, c) -> list:
    """`c`'s acknowledgement commit callbacks so far: (offsets, error) of each."""
    return [(sorted(o for part in op.value["partitions"] for o in part["offsets"]), op.value["error"])
            for op in s.ops(c.name, "callback")]


def _members(s) -> list:
    """The members of the session's group (none while the group does not exist yet)."""
    return s.describe().get("members") or []


def _one_record(s):
    """A consumer given the one record produced to the session's topic: (consumer, [record])."""
    s.produce(1)
    c = s.consumer()
    got = c.poll_until(1)
    precondition(len(got) == 1, f"the consumer was given {len(got)} of 1 record")
    return c, got


def _consumes_the_first_record(s, c) -> None:
    """`c` is given the session topic's first record (offset 0), ACCEPTs and commits it; the history conforms."""
    got = c.poll_until(1, ack="ACCEPT")
    c.commit_ok()
    assert [(r.topic, r.offset) for r in got] == [(s.topic, 0)], f"{c.name} was given {got}, not {s.topic}'s offset 0"
    s.assert_conforms()


def _one_committed(s):
    """A consumer whose one record it was given is ACCEPTed and committed: (consumer, [record])."""
    c, got = _one_record(s)
    assert c.ack(got, "ACCEPT") is None, f"the client refused the ACCEPT: {c.last_error}"
    c.commit_ok()
    return c, got


@pytest.mark.rule("ack-after-commit-refused")
def test_an_acknowledgement_once_committed_cannot_be_changed(share_session):
    """Row A6 ("@throws IllegalStateException if the record is not waiting to be acknowledged"), gap G5: a record
    ACCEPTed and committed is no longer waiting to be acknowledged: a RELEASE of it is refused, nothing is sent, and
    the record is never delivered again. (A second acknowledgement *before* the commit is not decided: the Java
    client replaces the pending one, which the Javadoc neither allows nor forbids; docs/client-contract.md G5.)"""
    s = share_session(topic_partitions=1, lock_duration_ms=60000)
    s.require("ack:RELEASE", "commit_sync")
    c, got = _one_committed(s)
    error = c.ack(got, "RELEASE")
    assert error, "the client took a RELEASE of a record whose ACCEPT it had already committed (no error)"
    c.commit_sync()
    assert c.poll(3.0) == [], "the record came back after its committed ACCEPT: the refused RELEASE was sent"
    s.assert_conforms()


@pytest.mark.rule("renew-implicit-refused")
@pytest.mark.requires(line="4.2")
def test_an_implicit_mode_consumer_refuses_renew(share_session):
    """Rows R2 ("The application must be using explicit acknowledgement.") and F1 (KIP-1222: "In implicit mode,
    the acknowledgement type is fixed to ACCEPT."), gap G11: an implicit-mode consumer refuses RENEW, sends
    nothing, and its next poll accepts the whole batch (the record is not kept acquired)."""
    s = share_session(topic_partitions=1)
    s.require("implicit", "ack:RENEW")
    s.produce(3)
    c = s.consumer(mode="implicit")
    batch = c.poll(10.0)
    precondition(bool(batch), "no record delivered")
    error = c.ack([batch[-1]], "RENEW") or ""
    assert error, "an implicit-mode consumer took a RENEW (no error)"
    rest = c.poll_until(3 - len(batch), timeout=30)  # each poll accepts the batch before it
    c.commit_sync()
    assert sorted(r.offset for r in batch + rest) == [0, 1, 2], f"delivered {batch + rest}"
    assert c.poll(3.0) == [], "a record came back: the refused RENEW was sent, or a batch was not accepted"
    s.assert_conforms()


@pytest.mark.rule("renew-callback")
@pytest.mark.requires(line="4.2")
def test_the_callback_reports_a_renew(share_session):
    """Row R5 ("An acknowledgement commit callback can be used to observe the completion of the
    acknowledgements."), gap G12: a RENEW committed with commitAsync is reported by the acknowledgement commit
    callback, naming the renewed offset, without error."""
    s = share_session(topic_partitions=1, lock_duration_ms=30000)
    s.require("ack:RENEW", "commit_async", "callback")
    c, got = _one_record(s)
    assert c.ack(got, "RENEW") is None, f"the client refused the RENEW (rule ack-renew): {c.last_error}"
    c.commit_async()
    hand_back = s.driver.supports("renew_hand_back")
    again: list = []

    def reported() -> bool:  # callbacks are served while the client polls
        batch = c.poll(0.5)
        if batch and hand_back:  # the renewed record, returned again (renew-hand-back): kept for its ACCEPT
            again.extend(batch)
            c.ack(batch, "ACCEPT")
        return any(got[0].offset in offsets for offsets, _ in _callbacks(s, c))
    try:
        wait_until(reported, timeout=30, interval=0.0, what="the acknowledgement commit callback of the RENEW")
    except WaitTimeout:  # the client polled all along: its callback did not come
        raise AssertionError(f"no acknowledgement commit callback reported the RENEW of offset {got[0].offset} in "
                             f"30 s of polling (callbacks: {_callbacks(s, c)})") from None
    renew = [error for offsets, error in _callbacks(s, c) if got[0].offset in offsets]
    assert renew[0] is None, f"the callback reported the RENEW failed: {renew[0]}"
    if hand_back:  # the record comes back with a new handle (the old one cannot be acknowledged): accepted
        if not again:
            again = c.poll_until(1, timeout=15)
            precondition(len(again) == 1, "the renewed record was not returned again (rule renew-hand-back decides it)")
            assert c.ack(again, "ACCEPT") is None, f"the holder could not accept its renewed record: {c.last_error}"
        c.commit_ok()
    # (a library without the hand-back settles the renewed record with the polls above, as its API has it: the
    # history's check below holds it to the model either way)
    s.assert_conforms()


@pytest.mark.rule("joins-on-poll")
def test_a_consumer_joins_the_group_when_it_polls(share_session):
    """Row K9 ("After subscribing to a set of topics, the consumer will automatically join the group when
    poll(Duration) is invoked."), gap G16: once its first poll returned, the consumer is a member of the group in
    the group's description within 10 s (an assertion: other tests only wait for it), and stays one while it polls."""
    s = share_session(topic_partitions=1)
    c = s.consumer()
    c.poll(1.0)  # an empty topic: the join is what the poll did
    polled = time.monotonic()
    try:
        wait_until(lambda: c.poll(0.5) == [] and len(_members(s)) == 1, timeout=10,
                   what="the consumer to be a member of the group")
    except WaitTimeout:
        raise AssertionError(f"the consumer polled but was not a member of the group {time.monotonic() - polled:.0f} s "
                             f"later: {_members(s)}") from None
    s.produce(1)
    got = c.poll_until(1, timeout=30)
    assert len(got) == 1, "the member was given no record"
    assert len(_members(s)) == 1, f"the polling consumer left the group: {_members(s)}"
    assert c.ack(got, "ACCEPT") is None
    c.commit_ok()
    s.assert_conforms()


@pytest.mark.rule("empty-commit-noop")
def test_a_commit_with_nothing_to_commit_does_nothing(share_session):
    """Rows C9 (KIP-932's explicit example: "The call to KafkaShareConsumer.commitAsync() just does nothing because
    the batch was empty.") and C4 ("@return A map of the results for each topic-partition for which delivery was
    acknowledged"), gap G14: with every acknowledgement committed, commitSync returns no result and commitAsync
    brings no callback over 3 s of polling."""
    s = share_session(topic_partitions=1)
    s.require("commit_sync", "commit_async", "callback")
    c, _ = _one_committed(s)
    until = time.monotonic() + 3.0  # a callback of that commit, if the library makes one, comes while it polls
    while time.monotonic() < until:
        assert c.poll(0.5) == [], "a record came back after its committed ACCEPT"
    before = len(_callbacks(s, c))
    results = c.commit_sync()
    assert results == [], f"commitSync with nothing acknowledged since the last commit returned results: {results}"
    c.commit_async()
    until = time.monotonic() + 3.0
    while time.monotonic() < until:
        c.poll(0.5)
    after = _callbacks(s, c)[before:]
    assert after == [], f"commitAsync with nothing to commit brought callbacks: {after}"
    s.assert_conforms()


@pytest.mark.rule("stays-in-group")
def test_a_polling_consumer_stays_in_the_group(share_session):
    """Row K10 ("As long as you continue to call poll, the consumer will stay in the group and continue to receive
    records from the partitions it was assigned."), gap G17: a consumer that polls about once a second stays the
    same member (one member id in every description) for twice the group's session timeout, and receives every
    record produced meanwhile. (The group's session timeout is the broker's least, 6 s: the span scales with it,
    issue 53.)"""
    s = share_session(topic_partitions=1, group_configs={"share.session.timeout.ms": "6000"})
    c = s.consumer()
    try:
        wait_until(lambda: c.poll(0.5) == [] and len(_members(s)) == 1, timeout=30,
                   what="the consumer to be a member of the group")
    except WaitTimeout:
        raise AssertionError(f"the consumer polled for 30 s but was not a member of the group: {_members(s)}") from None
    first = _members(s)[0]["member"]
    span = 2 * s.limits.get("session_timeout_ms", 45000) / 1000
    until, produced, received, seen = time.monotonic() + span, 0, [], {first}
    while time.monotonic() < until:
        s.produce(1)
        produced += 1
        batch = c.poll(1.0)
        if batch:
            assert c.ack(batch, "ACCEPT") is None, f"the client refused the ACCEPT: {c.last_error}"
            received.extend(batch)
        seen.update(m["member"] for m in _members(s))
    assert seen == {first}, (f"the consumer polled all along, yet the group's members over {span:.0f} s were "
                             f"{sorted(seen)} (it joined as {first})")
    received += c.poll_until(produced - len(received), timeout=30, ack="ACCEPT")
    assert sorted(r.offset for r in received) == list(range(produced)), \
        f"the polling member received {len(received)} of the {produced} records produced meanwhile"
    c.commit_sync()  # (the last ACCEPTs may have gone with a poll already: no result is then due)
    s.assert_settled_by_the_broker("every record was ACCEPTed and the acknowledgements committed")
    s.assert_conforms()


def _given_nothing_after(s, stop, what: str) -> None:
    """A consumer that committed the session's first record runs `stop` (`what` names the call; it returns the
    client's error, if any): then no record produced after is given to it, and another member of the group
    receives them all."""
    c, _ = _one_committed(s)
    error = stop(c)
    assert error is None, f"the client refused {what}: {error}"
    other = s.consumer()
    s.produce(5)
    after: list = []
    for _ in range(3):  # the stopped consumer polls first: a client still subscribed is given records here
        batch = c.poll(2.0)
        if batch:
            after.extend(batch)
            c.ack(batch, "ACCEPT")  # settled, so the history's check is about the rule, not a record left behind
            c.commit_sync()
    assert not after, (f"the consumer was given {len(after)} record(s) produced after {what} returned "
                       f"(offsets {sorted(r.offset for r in after)})")
    rest = other.poll_until(5, timeout=60, ack="ACCEPT")
    other.commit_ok()
    assert sorted(r.offset for r in rest) == [1, 2, 3, 4, 5], f"the other member was given {rest}"
    s.assert_conforms()


@pytest.mark.rule("unsubscribe-stops")
def test_an_unsubscribed_consumer_is_given_no_more_records(share_session):
    """Row S7 ("Unsubscribe from topics currently subscribed with subscribe(Collection)."), gap G35 (driver contract
    2): once unsubscribe() returned, the consumer's polls give it no record produced after, and another member of
    the group receives them all. (What its polls raise is not asserted: row P2's rule, gap G20.)"""
    s = share_session(topic_partitions=1)
    s.require("unsubscribe")
    _given_nothing_after(s, lambda c: c.unsubscribe(), "unsubscribe()")


@pytest.mark.rule("subscribe-empty-unsubscribes")
def test_a_subscribe_to_no_topic_unsubscribes(share_session):
    """Row S3 ("If the given list of topics is empty, it is treated the same as unsubscribe()."), gap G34 (driver
    contract 3): after subscribe([]) returned, the consumer is given no record produced after, and another member
    of the group receives them all, as `unsubscribe-stops` asks of unsubscribe()."""
    s = share_session(topic_partitions=1)
    s.require("subscribe")
    _given_nothing_after(s, lambda c: c.subscribe([]), "subscribe([])")


@pytest.mark.rule("subscription-echo")
def test_subscription_names_the_topics_of_the_most_recent_subscribe(share_session):
    """Row S1 ("Will return the same topics used in the most recent call to subscribe(Collection), or an empty set
    if no such call has been made."), gap G32 (driver contract 3): a consumer started without a subscription names
    none; after subscribe([A]) it names A, after subscribe([B]) B alone, after subscribe([A, B]) both; subscribed
    to A again, it consumes A's record."""
    s = share_session(topic_partitions=1)
    s.require("subscribe", "subscribe_none")
    second = s.second_topic()
    s.produce(1)
    c = s.consumer(topics=[])
    assert c.subscription() == [], f"before any subscribe() the subscription was {c.subscription()}, not empty"
    for topics in ([s.topic], [second], [s.topic, second], [s.topic]):
        assert c.subscribe(topics) is None, f"the client refused subscribe({topics}): {c.last_error}"
        named = c.subscription()
        assert named == sorted(topics), f"after subscribe({topics}) subscription() named {named}"
    _consumes_the_first_record(s, c)


@pytest.mark.rule("subscribe-replaces")
def test_a_subscribe_replaces_the_subscription(share_session):
    """Row S2 ("Topic subscriptions are not incremental. This list will replace the current assignment, if there is
    one."), gap G33 (driver contract 3): a consumer of topic A that subscribes to B alone is, once the group
    assigns it B's partition only, given every record produced to B and none of those produced to A after, which
    another member of the group receives."""
    s = share_session(topic_partitions=1)
    s.require("subscribe")
    second = s.second_topic()
    c, _ = _one_committed(s)
    assert c.subscribe([second]) is None, f"the client refused subscribe([{second}]): {c.last_error}"
    early: list = []

    def assigned_b() -> bool:
        early.extend(c.poll(1.0))  # (nothing new was produced: a record here is the committed one again)
        return [m["partitions"] for m in _members(s)] == [[[second, 0]]]
    try:
        wait_until(assigned_b, timeout=20, interval=0.0,
                   what=f"the group to assign {c.name} only {second}-0 after subscribe([{second}])")
    except WaitTimeout as exc:  # the client kept (or added to) its subscription: its failure
        raise AssertionError(f"the subscription was not replaced: {exc}; the group's members then: {_members(s)}") \
            from None
    assert not early, f"records given while the subscription moved: {early}"
    s.produce(3)
    s.produce(3, topic=second)
    got: list = []
    until = time.monotonic() + 60
    while time.monotonic() < until and len([r for r in got if r.topic == second]) < 3:
        batch = c.poll(2.0)
        if batch:
            assert c.ack(batch, "ACCEPT") is None, f"the client refused the ACCEPT: {c.last_error}"
            c.commit_ok()
            got.extend(batch)
    stale = [r for r in got if r.topic != second]
    assert not stale, (f"subscribed to {second} alone, the consumer was given {len(stale)} record(s) of {s.topic} "
                       f"produced after: offsets {sorted(r.offset for r in stale)}")
    assert sorted(r.offset for r in got) == [0, 1, 2], f"of {second}'s 3 records the consumer was given {got}"
    other = s.consumer()
    rest = other.poll_until(3, timeout=60, ack="ACCEPT")
    other.commit_ok()
    assert sorted(r.offset for r in rest) == [1, 2, 3], f"{s.topic}'s later records went to the other member as {rest}"
    s.assert_conforms()


@pytest.mark.rule("subscribe-invalid-refused")
def test_a_subscribe_to_an_empty_topic_name_is_refused(share_session):
    """Row S5 ("@throws IllegalArgumentException if topics is null or contains null or empty elements"), gap G36
    (driver contract 3): subscribe() with an empty topic name is refused (confluent-kafka: ValueError), the
    subscription stays the session's topic, and the consumer consumes its record."""
    s = share_session(topic_partitions=1)
    s.require("subscribe")
    s.produce(1)
    c = s.consumer()
    error = c.subscribe([s.topic, ""])
    assert error, "subscribe() with an empty topic name was taken (no error)"
    assert "IllegalArgument" in error or "ValueError" in error, \
        f"subscribe() with an empty topic name was refused with {error}, not IllegalArgumentException (ValueError)"
    assert c.subscription() == [s.topic], f"after the refused subscribe() the subscription was {c.subscription()}"
    _consumes_the_first_record(s, c)


@pytest.mark.rule("default-ack-mode")
def test_a_consumer_without_an_acknowledgement_mode_acknowledges_implicitly(share_session):
    """Row M2 ("If the application sets the property to "implicit" or does not set it at all, then the consumer is
    using implicit acknowledgement."), gap G23 (driver contract 3, `mode: "default"`: the driver sets no mode): the
    batch a poll returned, not acknowledged, is accepted by the next poll, which raises nothing (explicit mode
    would refuse it), and the broker settles it. (One record: the batch is all there is, so nothing else may come.)"""
    s = share_session(topic_partitions=1)
    s.produce(1)
    c = s.consumer(mode="default")
    got = c.poll(10.0)
    precondition(len(got) == 1, f"the consumer was given {len(got)} of 1 record")
    assert c.poll(2.0) == [], "a record came back after the poll that was to accept it"
    assert c.last_error is None, f"the poll after an unacknowledged batch was refused: {c.last_error}"
    s.assert_settled_by_the_broker("the next poll accepted the batch (implicit acknowledgement)")
    s.assert_conforms()


@pytest.mark.rule("ack-default-accepts")
def test_an_acknowledgement_without_a_type_accepts(share_session):
    """Rows A1 ("Acknowledge successful delivery of a record returned on the last poll(Duration) call.") and A2
    (the one-argument overload's other sentences), gap G24 (driver contract 3: an `ack` record without `type`):
    the record, acknowledged without a type and committed, is settled by the broker and never delivered again.
    (Without a dead-letter queue ACCEPT and REJECT look alike from outside: both are final.)"""
    s = share_session(topic_partitions=1)
    s.require("ack_default", "commit_sync")
    c, got = _one_record(s)
    assert c.ack(got, None) is None, f"the client refused acknowledge(record): {c.last_error}"
    c.commit_ok()
    assert c.poll(3.0) == [], "the record came back after acknowledge(record) was committed"
    s.assert_settled_by_the_broker("acknowledge(record) was committed without error")
    s.assert_conforms()


@pytest.mark.rule("ack-by-offset")
def test_an_acknowledgement_by_offset_acts_as_one_by_record(share_session):
    """Rows A9 and A10 ("Acknowledge delivery of a record returned on the last poll(Duration) call [...] It provides
    an alternative to acknowledge(ConsumerRecord, AcknowledgeType)"), gap G25 (driver contract 3, `"by": "offset"`):
    records the last poll returned, ACCEPTed, RELEASEd and REJECTed by topic, partition and offset, behave as
    `ack-accept`, `ack-release` and `ack-reject` ask: only the RELEASEd one comes back, with delivery count 2.
    Feature `ack_by_offset`: KafkaShareConsumer takes the overload only for a record whose delivery failed (the
    Javadoc's "such as when the record could not be deserialized"; gap G50), so the Java driver does not declare it."""
    s = share_session(topic_partitions=1)
    s.require("ack_by_offset", "ack:RELEASE", "ack:REJECT", "commit_sync")
    s.produce(3)
    c = s.consumer()
    types = {0: "ACCEPT", 1: "RELEASE", 2: "REJECT"}
    got: list = []
    until = time.monotonic() + 30
    while len({r.offset for r in got}) < 3 and time.monotonic() < until:  # the first deliveries of 0, 1, 2
        batch = c.poll(5.0)
        for record in batch:  # a redelivery is ACCEPTed, by offset too
            type_ = types[record.offset] if record.delivery_count == 1 else "ACCEPT"
            assert c.ack([record], type_, by_offset=True) is None, \
                f"the client refused {type_} of offset {record.offset} by offset: {c.last_error}"
        if batch:
            c.commit_ok()
        got.extend(batch)
    precondition(len({r.offset for r in got}) == 3, f"the consumer was given {len(got)} of 3 records")
    if not any(r.delivery_count > 1 for r in got):  # the RELEASEd record comes back at the next fetch
        again = c.poll_until(1, timeout=15, ack="ACCEPT")
        got += again
        if again:
            c.commit_ok()
    assert sorted((r.offset, r.delivery_count) for r in got) == [(0, 1), (1, 1), (1, 2), (2, 1)], (
        f"after ACCEPT, RELEASE and REJECT by offset of offsets 0, 1, 2 the consumer was given "
        f"{[(r.offset, r.delivery_count) for r in got]} (offset, delivery count): only offset 1 was to come back")
    assert c.poll(3.0) == [], "a record acknowledged by offset with a final type came back"
    s.assert_settled_by_the_broker("every record was finally acknowledged and committed")
    s.assert_conforms()


@pytest.mark.rule("groups-independent")
def test_share_groups_and_consumer_groups_consume_one_topic_independently(share_session):
    """Row K8 ("You can have multiple share groups and consumer groups independently consuming from the same
    topics."), gap G19: after the session's share group consumed and accepted five records, a consumer of a second
    share group (its operations in a history of their own: the session's checkers judge one group) is given all
    five, each with delivery count 1, and a consumer group's member reads all five."""
    s = share_session(topic_partitions=1)
    s.produce(5)
    c = s.consumer()
    got = c.poll_until(5, ack="ACCEPT")
    c.commit_ok()
    precondition(sorted(r.offset for r in got) == list(range(5)), f"the session's group was given {got}")
    second = f"{s.group}-second"
    refusal = s.try_group_configs(second, share_auto_offset_reset="earliest")
    precondition(refusal is None, f"the second share group's share.auto.offset.reset was refused: {refusal}")
    other = s.consumer(group=second, own_history=True)
    began = time.monotonic()

    def not_joined() -> bool:  # 10 s of polls and still no member of the second group: it joined another one
        return time.monotonic() - began > 10 and not (s.admin("describe", second).get("members") or [])
    again = other.poll_until(5, timeout=60, ack="ACCEPT", settled=not_joined)
    assert sorted((r.offset, r.delivery_count) for r in again) == [(o, 1) for o in range(5)], (
        f"a second share group on the topic was given {[(r.offset, r.delivery_count) for r in again]}, not the "
        f"five records once each with delivery count 1 (its members: {s.admin('describe', second).get('members')})")
    other.commit_ok()
    member, offsets = s.consumer_group_member(f"{s.group}-consumers"), set()
    try:
        def read_all() -> bool:
            message = member.poll(0.5)
            if message is not None and message.error() is None:
                offsets.add(message.offset())
            return len(offsets) == 5
        wait_until(read_all, timeout=60, interval=0.0, what="the consumer group's member to read the five records")
    finally:
        member.close()
    s.assert_conforms()


#: How long a consumer whose subscription is at fault polls for its refusal (issue 53: was 30 s). The Java client
#: throws from its first poll (InvalidTopicException once the metadata names the topic invalid, IllegalStateException
#: at once), franz-go's first fetch returns the error: each well inside a second, on a loaded machine too.
REFUSAL_PATIENCE_S = 10.0


def _refused_then_served(s, topics: list[str], codes: tuple[str, ...]) -> None:
    """A consumer subscribed to `topics` is refused at poll with one of `codes` (within `REFUSAL_PATIENCE_S`) and
    given no record; then a consumer of the same group subscribed to the session's topic consumes the one record
    produced (the group was served: only the subscription was at fault)."""
    s.produce(1)
    refused = s.consumer(topics=topics)
    refused.poll_until_error(codes, timeout=REFUSAL_PATIENCE_S)
    assert refused.records_given() == [], f"{refused.name}, subscribed to {topics}, was given records"
    refused.close()
    _consumes_the_first_record(s, s.consumer())


@pytest.mark.rule("poll-invalid-topic")
def test_a_consumer_subscribed_to_an_invalid_topic_name_is_told_at_poll(share_session):
    """Row P11 ("@throws InvalidTopicException if the current subscription contains any invalid topic"), gap G21:
    a consumer subscribed to a topic whose name Kafka does not allow (a space and a "!") is refused at poll with
    the invalid-topic error and given nothing; a consumer of the same group subscribed to the session's topic
    then consumes its record (the group was served: only the subscription was at fault)."""
    _refused_then_served(share_session(topic_partitions=1), ["not a valid topic!"],
                         ("INVALID_TOPIC_EXCEPTION", "TOPIC_EXCEPTION"))


@pytest.mark.rule("poll-not-subscribed")
def test_a_poll_without_a_subscription_is_an_error(share_session):
    """Rows P2 ("It is an error to not have subscribed to any topics before polling for data.") and P9's first half
    ("@throws IllegalStateException if the consumer is not subscribed to any topics"), gap G20: a consumer that
    subscribed to no topic is told so at poll (IllegalStateException) and given no record; a consumer of the same
    group subscribed to the session's topic then consumes its record."""
    _refused_then_served(share_session(topic_partitions=1), [], ("ILLEGAL_STATE",))


#: rule `max-poll-interval-leaves`: the consumer's max.poll.interval.ms, the group's session timeout (raised so that
#: a client whose heartbeats stop with its polls is not timed out inside the bound) and the bound on the leave
MAX_POLL_INTERVAL_MS, LONG_SESSION_MS, LEAVE_BOUND_S = 5000, 45000, 20


@pytest.mark.rule("max-poll-interval-leaves")
def test_a_consumer_that_stops_polling_leaves_after_max_poll_interval(share_session):
    """Row K12 ("If you don't call poll at least as frequently as this, the client will proactively leave the share
    group.", max.poll.interval.ms), gap G18: a consumer with max.poll.interval.ms=5000 that consumed and committed,
    then stops polling with its process alive, is gone from the group's description within 20 s, less than half
    the group's session timeout (45 s), so the coordinator did not time it out: the client left. A library without
    the setting (its driver's start lists it ignored) does not support the rule."""
    s = share_session(topic_partitions=1, group_configs={"share.session.timeout.ms": str(LONG_SESSION_MS)})
    s.produce(3)
    c = s.consumer(max_poll_interval_ms=str(MAX_POLL_INTERVAL_MS))
    start = next(iter(s.ops(c.name, "start")), None)
    if start is not None and "max.poll.interval.ms" in (start.value.get("ignored_config") or []):
        pytest.skip(f"not supported by the {s.driver.name} driver: its library has no max.poll.interval.ms "
                    f"(the driver's start lists it ignored)")
    got = c.poll_until(3, ack="ACCEPT")
    c.commit_sync()
    precondition(len(got) == 3 and len(_members(s)) == 1,
                 f"the consumer was given {len(got)} of 3 records, members {_members(s)}")
    try:
        wait_until(lambda: not _members(s), timeout=LEAVE_BOUND_S, interval=0.5,
                   what="the consumer that stopped polling to leave the group")
    except WaitTimeout:
        raise AssertionError(
            f"the consumer stopped polling with max.poll.interval.ms={MAX_POLL_INTERVAL_MS} and was still a member "
            f"{LEAVE_BOUND_S} s later: {_members(s)}") from None
    c.close()
    s.assert_conforms()


@pytest.mark.rule("ack-is-local")
def test_an_acknowledgement_is_local_until_the_next_poll_or_commit(share_session):
    """Row E5 ("The calls to acknowledge(ConsumerRecord, AcknowledgeType) are simply updating local information in the
    consumer."), gap G28: a record ACCEPTed within its lock, but neither polled past nor committed, stays acquired only
    until its lock (2 s) ends: the acknowledgement was local, so another consumer is given the record with delivery
    count 2 within the lock and `LATE_AFTER_LOCK_S`. (The holder's late commit is sent; Kafka 4.3-4.4 answer it with
    success once the record is below the start offset: the broker's behaviour, docs/client-contract.md note 10.)"""
    s = share_session(topic_partitions=1, lock_duration_ms=2000)
    s.require("ack_local", "commit_sync")
    c, got = _one_record(s)
    assert c.ack(got, "ACCEPT") is None, f"the client refused the ACCEPT: {c.last_error}"
    other = s.consumer()
    again = other.poll_until(1, timeout=2 + LATE_AFTER_LOCK_S, ack="ACCEPT")
    assert [(r.offset, r.delivery_count) for r in again] == [(0, 2)], (
        f"another consumer was given {[(r.offset, r.delivery_count) for r in again]} after the holder's lock ended, "
        f"not offset 0 with delivery count 2: the ACCEPT was sent without a poll or commit")
    other.commit_ok()
    c.commit_sync()  # the holder's late ACCEPT: what the broker answers is not the client's (docs/client-contract.md, note 10)
    s.assert_conforms()


@pytest.mark.rule("lock-timeout-reported")
@pytest.mark.requires(line="4.2")  # kafka-clients 4.2 brought acquisitionLockTimeoutMs()
def test_the_reported_acquisition_lock_timeout_is_the_groups(share_session):
    """Rows L1 ("Returns the acquisition lock timeout for the last set of records fetched from the cluster.") and L2
    ("@return The acquisition lock timeout in milliseconds, or Optional.empty() if the timeout is not known."), gap G27
    (driver contract 3, the `lock_timeout` command): before its first poll the consumer knows no lock timeout; once a
    poll returned records it reports the group's share.record.lock.duration.ms (7000 here, no default)."""
    s = share_session(topic_partitions=1, lock_duration_ms=7000)
    s.require("lock_timeout")
    s.produce(1)
    c = s.consumer()
    before = c.lock_timeout()
    assert before is None, f"before any fetch the consumer reported a lock timeout of {before} ms"
    got = c.poll_until(1, ack="ACCEPT")
    c.commit_ok()
    precondition(len(got) == 1, f"the consumer was given {len(got)} of 1 record")
    after = c.lock_timeout()
    assert after == 7000, (f"after a fetch the consumer reported a lock timeout of {after} ms, not the group's "
                           f"share.record.lock.duration.ms of 7000")
    s.assert_conforms()


@pytest.mark.rule("no-argument-overloads")
def test_commit_sync_and_close_without_a_timeout(share_session):
    """Rows C1, C2 ("Commit the acknowledgements for the records returned. [...]", commitSync() without an argument)
    and Z1 ("Close the consumer, waiting for up to the default timeout of 30 seconds for any needed cleanup."), gap
    G29/G30's overloads (driver contract 3, `"timeout": null`): commitSync() carries the ACCEPT of the first record
    (a result, no error); close() releases the second, held unacknowledged, to another consumer within
    `after_close_s` with delivery count 2, its lock being 60 s, and the member is gone."""
    s = share_session(topic_partitions=1, lock_duration_ms=60000)
    s.require("default_timeouts", "commit_sync")
    c, got = _one_record(s)
    assert c.ack(got, "ACCEPT") is None, f"the client refused the ACCEPT: {c.last_error}"
    results = c.commit_sync(timeout=None)
    assert results and all(r["error"] is None for r in results), f"commitSync() returned {results}"
    s.assert_settled_by_the_broker("commitSync() returned success for the ACCEPT")
    s.produce(1)
    held = c.poll_until(1)
    precondition([r.offset for r in held] == [1], f"the consumer was given {held}, not offset 1")
    other = s.consumer()
    assert c.close(wait_exit=False, timeout=None) is None, f"close() raised: {c.last_error}"
    closed = time.monotonic()
    again = other.poll_until(1, timeout=s.after_close_s, ack="ACCEPT")
    assert [(r.offset, r.delivery_count) for r in again] == [(1, 2)], (
        f"within {s.after_close_s:.0f} s of close() returning, another consumer was given "
        f"{[(r.offset, r.delivery_count) for r in again]}, not the held record again (its lock is 60 s)")
    other.commit_ok()
    members = [m["member"] for m in _members(s)]
    assert len(members) == 1, f"{time.monotonic() - closed:.1f} s after close() the group had members {members}"
    s.assert_conforms()


@pytest.mark.rule("poll-waits")
def test_one_poll_returns_when_records_come_and_else_waits_its_timeout(share_session):
    """Rows P3 ("This method returns immediately if there are records available.") and P4 ("Otherwise, it will
    await the passed timeout."), gap G31 (driver contract 3, `poll_once`: one library call, timed): with nothing to
    deliver, a 2 s poll returns empty after at least 1.8 s; with a record produced, a 30 s poll returns it in well
    under its timeout (10 s: a fetch and the record's delivery)."""
    s = share_session(topic_partitions=1)
    s.require("poll_once")
    c, got = _one_record(s)  # joined and fetching
    assert c.ack(got, "ACCEPT") is None, f"the client refused the ACCEPT: {c.last_error}"
    c.commit_ok()
    records, elapsed, error = c.poll_once(2.0)
    assert error is None and records == [], f"a poll with nothing to deliver gave {records}, raised {error}"
    assert elapsed is not None and elapsed >= 1800, f"a 2 s poll with nothing to deliver returned after {elapsed} ms"
    s.produce(1)
    records, elapsed, error = c.poll_once(30.0)
    assert error is None, f"the poll raised {error}"
    assert [r.offset for r in records] == [1], f"a 30 s poll returned {records} after {elapsed} ms"
    assert elapsed < 10000, f"with a record available a 30 s poll took {elapsed} ms to return it"
    assert c.ack(records, "ACCEPT") is None, f"the client refused the ACCEPT: {c.last_error}"
    c.commit_ok()
    s.assert_conforms()


@pytest.mark.rule("negative-timeout-refused")
def test_a_negative_timeout_is_refused(share_session):
    """Rows P8 ("@throws IllegalArgumentException if the timeout value is negative"), C12 and Z15 (the same of
    commitSync(Duration) and close(Duration)), gaps G29-G31 (driver contract 3): a poll, a commitSync and a close
    given -1 s are each refused with IllegalArgumentException, and the consumer goes on: its ACCEPT is committed by
    the next commitSync, and it is still a member until it closes."""
    s = share_session(topic_partitions=1)
    s.require("negative_timeout_refused", "poll_once", "commit_sync")
    c, got = _one_record(s)
    records, _, error = c.poll_once(-1.0)
    assert error and "IllegalArgument" in error, f"poll(-1 s) returned {records}, raised {error}"
    assert c.ack(got, "ACCEPT") is None, f"the client refused the ACCEPT: {c.last_error}"
    results = c.commit_sync(timeout=-1.0)
    assert not results and c.last_error and "IllegalArgument" in c.last_error, \
        f"commitSync(-1 s) returned {results}, raised {c.last_error}"
    c.commit_ok()
    error = c.close(wait_exit=False, timeout=-1.0)
    assert error and "IllegalArgument" in error, f"close(-1 s) raised {error}"
    assert len(_members(s)) == 1, f"after a refused close the group's members were {_members(s)}"
    s.assert_conforms()


@pytest.mark.rule("wakeup-next-call")
def test_a_wakeup_with_no_call_blocking_is_raised_by_the_next_call(share_session):
    """Rows W10 ("If no thread is blocking in a method which can throw WakeupException, the next call to such a method
    will raise it instead."), P12 and C5 (their "before" halves: "@throws WakeupException if wakeup() is called
    before [...] this method is called"), gap G26 (driver contract 3, `wakeup` on the driver's own thread): after
    wakeup() the next poll raises WakeupException and the poll after delivers the record; after another wakeup() the
    next commitSync raises it (its outcome unknown) and the commitSync after leaves the ACCEPT settled."""
    s = share_session(topic_partitions=1)
    s.require("wakeup", "commit_sync")
    s.produce(1)
    c = s.consumer()
    assert c.wakeup() is None, f"wakeup() raised {c.last_error}"
    woken = c.poll(5.0)
    assert c.last_error and "Wakeup" in c.last_error, \
        f"the poll after wakeup() returned {woken} and raised {c.last_error}, not WakeupException"
    got = woken or c.poll_until(1)
    precondition(len(got) == 1, f"after the woken poll the consumer was given {len(got)} of 1 record")
    assert c.ack(got, "ACCEPT") is None, f"the client refused the ACCEPT: {c.last_error}"
    assert c.wakeup() is None, f"wakeup() raised {c.last_error}"
    op = c.commit_outcome()
    assert op is not None and op.type != "ok" and "Wakeup" in str(op.value.get("error")), \
        f"the commitSync after wakeup() ended with {op}, not WakeupException"
    results = c.commit_sync()  # what the woken commit left (it may have sent the ACCEPT: its outcome is unknown)
    assert all(r["error"] is None for r in results), f"the commitSync after the woken one returned {results}"
    s.assert_settled_by_the_broker("the ACCEPT was committed by the commitSync after the woken one")
    s.assert_conforms()



def _goes_on(s, c, after: str) -> None:
    """`c` goes on `after` something it raised: a record produced now is delivered, accepted and committed; the
    history conforms."""
    s.produce(1)
    got = c.poll_until(1)
    precondition(len(got) == 1, f"after {after} the consumer was given {len(got)} of 1 record")
    assert c.ack(got, "ACCEPT") is None, f"the client refused the ACCEPT: {c.last_error}"
    c.commit_ok()
    s.assert_conforms()


def _a_blocking_poll_ended_by_another_thread(s, feature: str, field: str, exception: str, done: str) -> None:
    """A 20 s poll on an idle topic, a second thread of the driver acting 1 s in (`field`: `wakeup_after` or
    `interrupt_after`, driver contract 4), must end with `exception` within 10 s, not at its timeout; the poll after
    delivers a record produced then. `done`: what the second thread did, for the messages."""
    s.require(feature, "poll_once", "commit_sync")
    c = s.consumer()
    records, elapsed, error = c.poll_once(20.0, **{field: 1.0})
    precondition(not records, f"a poll on an empty topic returned {records}")
    precondition(c.last_reply.get(field.replace("_after", "_sent")) is True,
                 f"the poll returned after {elapsed} ms, before it was {done} 1 s in (error: {error})")
    assert error and exception.removesuffix("Exception") in error, \
        f"a poll {done} 1 s in ended after {elapsed} ms with {error!r}, not {exception}"
    assert elapsed is not None and elapsed < 10000, \
        f"a poll {done} 1 s in blocked {elapsed} ms (its timeout 20 s) before raising {error}"
    _goes_on(s, c, f"the poll {done}")


@pytest.mark.rule("wakeup-blocking-call")
def test_a_wakeup_from_another_thread_ends_a_blocking_poll(share_session):
    """Rows W3, W4, W8 ("Wake up the consumer. This method is thread-safe and is useful in particular to abort a long
    poll."), W9 ("The thread which is blocking in an operation will throw WakeupException.") and P12's "while" half,
    gap G45 (driver contract 4, `poll_once`'s `wakeup_after`): a 20 s poll on an idle topic, woken by a second thread
    1 s in, ends with WakeupException within 10 s, not at its timeout; the poll after delivers a record produced then."""
    _a_blocking_poll_ended_by_another_thread(share_session(topic_partitions=1), "wakeup_thread", "wakeup_after",
                                             "WakeupException", "woken by another thread")


@pytest.mark.rule("client-instance-id")
def test_client_instance_id_is_bounded_by_its_timeout_and_refused_without_telemetry(share_session):
    """Rows I2 ("This method waits up to timeout for the consumer client to complete the request."), I3 ("Specifying
    a timeout of zero means do not wait for the initial request to complete if it hasn't already."), I4 and I5
    ("@throws IllegalArgumentException if the timeout is negative", "@throws IllegalStateException if telemetry is not
    enabled"), I1 partly, gap G38 (driver contract 4, `client_instance_id`): with telemetry enabled (the default) a
    negative timeout is refused, a zero one returns at once and a 2 s one within 2 s (plus 3 s for a loaded machine),
    and two ids it gave are the same (brokers without a telemetry plugin give none: then it returns none); with
    `enable.metrics.push=false` the call is refused."""
    s = share_session(topic_partitions=1)
    s.require("client_instance_id", "commit_sync")
    c, got = _one_record(s)
    _, _, error = c.client_instance_id(-1.0)
    assert error and "IllegalArgument" in error, f"clientInstanceId(-1 s) raised {error!r}, not IllegalArgumentException"
    first, elapsed, error = c.client_instance_id(0.0)
    assert error is None, f"clientInstanceId(0) raised {error}"
    assert elapsed is not None and elapsed < 1000, f"clientInstanceId(0) took {elapsed} ms: zero means do not wait"
    second, elapsed, error = c.client_instance_id(2.0)
    assert error is None, f"clientInstanceId(2 s) raised {error}"
    assert elapsed is not None and elapsed <= 5000, f"clientInstanceId(2 s) took {elapsed} ms, past its timeout"
    assert first is None or second is None or first == second, \
        f"clientInstanceId changed from {first} to {second}: it \"will not change after it is initially generated\""
    assert c.ack(got, "ACCEPT") is None, f"the client refused the ACCEPT: {c.last_error}"
    c.commit_ok()
    quiet = s.consumer(enable_metrics_push="false")
    _, _, error = quiet.client_instance_id(1.0)
    assert error and "IllegalState" in error, \
        f"clientInstanceId with enable.metrics.push=false raised {error!r}, not IllegalStateException"
    s.assert_conforms()


#: The consumer settings KIP-932 says a share group does not take (rows N5a-N5e), each with a value a plain consumer
#: of either Java or librdkafka takes, so that a refusal is of the setting, not of its value.
NOT_FOR_SHARE_GROUPS = {"auto.offset.reset": "earliest", "enable.auto.commit": "true",
                        "isolation.level": "read_uncommitted",
                        "partition.assignment.strategy": "org.apache.kafka.clients.consumer.RangeAssignor",
                        "interceptor.classes": "org.example.ShareInterceptor"}


def _refusal(s, setting: str, value: str, group: str | None = None, own_history: bool = False):
    """A consumer made with `setting=value`: (None, the consumer) if the client took it, (its error, None) if it
    refused to construct it."""
    from harness.conformance.consumer import ConstructionRefused
    try:
        return None, s.consumer(group=group, own_history=own_history, **{setting.replace(".", "_"): value})
    except ConstructionRefused as refused:
        return refused.error, None


def _offset_reset_inert(s, taken, produced: list[str]) -> str | None:
    """`auto.offset.reset=earliest` was taken: a second group whose `share.auto.offset.reset` is latest, joined by a
    consumer made with it, must not be given the three records produced before it joined (records are produced one at
    a time until one comes: then the group's start offset is set). The failure, or None. `produced`: gains the ids."""
    group = f"{s.group}-reset"
    refusal = s.try_group_configs(group, share_auto_offset_reset="latest")
    precondition(refusal is None, f"share.auto.offset.reset=latest was refused: {refusal}")
    taken.close()
    _, c = _refusal(s, "auto.offset.reset", "earliest", group=group, own_history=True)
    precondition(c is not None, "auto.offset.reset was taken once and refused the second time")

    def a_later_record_came() -> bool:
        produced.extend(s.produce(1))
        batch = c.poll(2.0)
        if batch:
            c.ack(batch, "ACCEPT")
        return any(r.offset >= 3 for r in c.records_given())
    try:
        wait_until(a_later_record_came, timeout=60, interval=0.0,
                   what="a record produced after the consumer made with auto.offset.reset=earliest joined")
    except WaitTimeout as exc:
        precondition(False, str(exc))
    early = sorted(r.offset for r in c.records_given() if r.offset < 3)
    c.close()
    if early:
        return (f"with auto.offset.reset=earliest taken, a group whose share.auto.offset.reset is latest was given "
                f"offsets {early}, produced before it joined: the client setting was applied")
    return None


@pytest.mark.rule("config-refused-or-inert")
def test_settings_share_groups_do_not_take_are_refused_or_inert(share_session):
    """Rows N4 ("The existing consumer configurations apply for share groups with the following exceptions:"),
    N5a-N5e and T2, gap G37 (driver contract 4: a refused construction is a `start` `fail` event): a consumer made
    with each of auto.offset.reset, enable.auto.commit, isolation.level, partition.assignment.strategy and
    interceptor.classes is refused (an error naming the setting), or its setting has no effect: auto.offset.reset=
    earliest on a group whose share.auto.offset.reset is latest delivers nothing produced before it joined;
    any other setting taken leaves the rule inconclusive: no black-box check here sees that it has no effect
    (isolation.level's would need a read_committed group given an aborted transaction on a topic of its own, not
    built while both clients certified refuse it; enable.auto.commit, partition.assignment.strategy and
    interceptor.classes change nothing a broker shows)."""
    s = share_session(topic_partitions=1)
    s.require("config_refusal", "commit_sync")
    produced = s.produce(3)
    failures, unseen = [], []
    for setting, value in NOT_FOR_SHARE_GROUPS.items():
        error, taken = _refusal(s, setting, value)
        if error is not None:
            precondition(setting in error and "Invalid value" not in error,
                         f"{setting}={value} was refused with an error that does not name the setting or refuses "
                         f"the value: {error}")
            continue
        if setting == "auto.offset.reset":
            failures.append(_offset_reset_inert(s, taken, produced))
        else:
            taken.close()
            unseen.append(setting)
    failures = [f for f in failures if f]
    assert not failures, "; ".join(failures)
    precondition(not unseen, f"the client took {', '.join(unseen)}; no black-box check sees that they have no effect")
    c = s.consumer()
    got = c.poll_until(len(produced), ack="ACCEPT")
    precondition(len(got) == len(produced), f"the consumer was given {len(got)} of {len(produced)} records")
    c.commit_ok()
    s.assert_conforms()


class _OnLane:
    """The consumers a `consumer-cut` fault may cut, for its plan and its history (the process the cut disconnects,
    whose delivery attempts it may end: row R8): one step consumer on one lane."""

    def __init__(self, lane: int, name: str) -> None:
        self.lane, self.name = lane, name

    def lane_processes(self, lane: int) -> list[str]:
        return [self.name] if lane == self.lane else []


def _cut_off_the_leader(s, kafka_cluster, c):
    """A context: `c` (a consumer on lane 0) cut off its partition's leader (`consumer-cut` of lane 0's link to the
    leader of partition 0, proven: ApiVersions through it times out), healed on the way out (Toxiproxy then closes
    the connections that were open through the cut: the client sees them dropped)."""
    from contextlib import contextmanager

    from harness.faults.base import FaultContext
    from harness.faults.nemesis import Nemesis

    @contextmanager
    def cut():
        leader = kafka_cluster.inspector.leader_of(s.topic, 0)
        brokers = sorted(kafka_cluster.broker_ids)
        precondition(leader in brokers, f"the partition has no leader among the brokers {brokers}: {leader}")
        nemesis = Nemesis(FaultContext(kafka_cluster, s.history, s.topic, s.group, consumers=_OnLane(0, c.name),
                                       config={**s.limits, "lock_tolerance_ms": s.spec.lock_tolerance_ms}, timeout=60))
        try:
            record = nemesis.start("consumer-cut", pick=brokers.index(leader))
            precondition(record.applied, f"the consumer's link to the leader was not cut: {record.reason}")
            precondition(record.targets == [f"lane0->n{leader}"],
                         f"the cut was {record.targets}, not the consumer's link to the leader n{leader}")
            yield record
        finally:
            nemesis.heal_all()
    return cut()


def _needs_lanes(kafka_cluster) -> None:
    from harness.cluster.base import Partitionable
    if not isinstance(kafka_cluster, Partitionable) or not getattr(kafka_cluster.spec, "consumer_lanes", 0):
        pytest.skip("needs a cluster the harness started with consumer lanes (the fault cuts a consumer's proxy)")


def _accepted_on_lane(s):
    """A consumer on lane 0 given the one record produced, which it ACCEPTs (not committed): (consumer, [record])."""
    s.produce(1)
    c = s.consumer(lane=0)
    got = c.poll_until(1)
    precondition(len(got) == 1, f"the consumer was given {len(got)} of 1 record")
    assert c.ack(got, "ACCEPT") is None, f"the client refused the ACCEPT: {c.last_error}"
    return c, got


#: How far past its timeout a bounded call may return (the driver's pipe, a loaded machine).
BOUND_TOLERANCE_S = 5.0


@pytest.mark.rule("commit-sync-bounded")
def test_a_commit_sync_with_its_leader_cut_off_returns_within_its_timeout(share_session, kafka_cluster):
    """Rows C11 ("This is a synchronous commit and will block until either the commit succeeds, an unrecoverable error
    is encountered (in which case it is thrown to the caller), or the timeout expires.") and C3's timeout half, gap G42
    (a fault inside a certification): a consumer on a lane of its own ACCEPTs a record; the lane's link to the
    partition's leader is cut (`consumer-cut`, proven: ApiVersions through it times out); commitSync(2 s) returns or
    raises within 2 s (plus 5 s of tolerance). The ACCEPT's outcome is then unknown: healed, the record is settled,
    or it comes back once its lock ran out and is accepted again (KafkaShareConsumer 4.4.0 reports the ACCEPT it
    sent after the heal failed, UnknownServerException, to its callback)."""
    _needs_lanes(kafka_cluster)
    s = share_session(topic_partitions=1, lock_duration_ms=15000)
    s.require("commit_sync", "default_timeouts")
    c, _ = _accepted_on_lane(s)
    with _cut_off_the_leader(s, kafka_cluster, c):
        began = time.monotonic()
        op = c.commit_outcome(timeout=2.0)
        took = time.monotonic() - began
    assert took <= 2.0 + BOUND_TOLERANCE_S, (
        f"commitSync(2 s) with the partition's leader cut off blocked {took:.1f} s (it ended with {op}): it must "
        f"return or raise once its timeout expires")
    c.commit_sync()  # the ACCEPT, if the timed-out commit left it to send
    again = c.poll_until(1, timeout=15 + LATE_AFTER_LOCK_S, ack="ACCEPT", settled=s.all_settled)
    if again:
        c.commit_ok()
    s.assert_settled_by_the_broker("the record was accepted, after the heal or once it came back")
    s.assert_conforms()


@pytest.mark.rule("close-bounded")
def test_a_close_with_its_leader_cut_off_returns_within_its_timeout(share_session, kafka_cluster):
    """Rows Z11 ("If the consumer is unable to complete acknowledgements and gracefully leave the group before the
    timeout expires, the consumer is force closed.") and Z9's timeout, gap G41 (a fault inside a certification): a
    consumer on a lane of its own ACCEPTs a record; the lane's link to the partition's leader is cut (`consumer-cut`,
    proven); close(3 s) returns within 3 s (plus 5 s of tolerance). The ACCEPT's outcome is unknown: healed, the record
    is settled, or another consumer is given it once its lock ran out and accepts it."""
    _needs_lanes(kafka_cluster)
    s = share_session(topic_partitions=1, lock_duration_ms=15000)
    s.require("close_timeout")
    c, _ = _accepted_on_lane(s)
    with _cut_off_the_leader(s, kafka_cluster, c):
        began = time.monotonic()
        error = c.close(wait_exit=False, timeout=3.0)
        took = time.monotonic() - began
    assert took <= 3.0 + BOUND_TOLERANCE_S, (
        f"close(3 s) with the partition's leader cut off blocked {took:.1f} s (error: {error}): the consumer must be "
        f"force closed once its timeout expires")
    other = s.consumer()
    again = other.poll_until(1, timeout=15 + LATE_AFTER_LOCK_S, ack="ACCEPT", settled=s.all_settled)
    if again:
        other.commit_ok()
    s.assert_settled_by_the_broker("the record was accepted, after the heal or by another consumer")
    s.assert_conforms()


def _read_from(path, offset: int) -> str:
    """What `path` holds past `offset` bytes ("" if it is gone)."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


#: How a library names a dropped connection in an acknowledgement's result: KafkaShareConsumer's DisconnectException
#: (the Javadoc's word) or NetworkException, librdkafka's `_TRANSPORT`, a socket's own words.
DISCONNECTED = ("DISCONNECT", "NETWORK", "TRANSPORT", "CONNECTION", "BROKEN PIPE", "EOF", "RESET BY PEER")


@pytest.mark.rule("callback-disconnect")
def test_an_acknowledgement_cut_off_by_a_dropped_connection_is_reported_as_one(share_session, kafka_cluster):
    """Row CB12 ("DisconnectException if the broker disconnected before the request could be completed"), gap G40 (a
    fault inside a certification): a consumer on a lane of its own ACCEPTs a record; its link to the partition's
    leader is cut (proven: bytes through it are dropped) and commitAsync sends the ACCEPT into it; the heal closes the
    connection (Toxiproxy drops the connections that were open through a cut). The callback for the record must then
    report the dropped connection, or what the broker answered if the library sent the ACCEPT again: success with the
    record settled, or a refusal (e.g. INVALID_SHARE_SESSION_EPOCH: its share session went with the connection). Any
    other error, while the brokers logged none since the cut, blames a broker for what the connection did (an
    unexpected server error); with a broker error logged, the outcome is inconclusive."""
    _needs_lanes(kafka_cluster)
    s = share_session(topic_partitions=1, lock_duration_ms=15000)
    s.require("commit_async", "callback")
    c, got = _accepted_on_lane(s)
    handed: list = []
    logs = getattr(kafka_cluster, "server_logs", {})  # the brokers' own logs: did one answer with an error?
    marks = {n: path.stat().st_size if path.is_file() else 0 for n, path in logs.items()}
    with _cut_off_the_leader(s, kafka_cluster, c):
        c.commit_async()
    offset = got[0].offset

    def reported() -> bool:  # callbacks are served while the client polls
        batch = c.poll(0.5)
        if batch:
            handed.extend(batch)
            c.ack(batch, "ACCEPT")
        return any(offset in offsets for offsets, _ in _callbacks(s, c))
    try:
        wait_until(reported, timeout=45, interval=0.0, what="the callback of the ACCEPT whose connection dropped")
    except WaitTimeout as exc:
        raise AssertionError(f"{exc}: an acknowledgement commit callback is owed for every acknowledgement") from None
    error = next(error for offsets, error in _callbacks(s, c) if offset in offsets)
    if error is None:
        s.assert_settled_by_the_broker("the callback reported the ACCEPT sent into a dropped connection committed")
    elif not any(word in str(error).upper() for word in DISCONNECTED) and not definitive(error):
        precondition(bool(logs), f"the callback reported {error!r}; the brokers' logs, which would show whether a "
                                 f"broker answered so, are not readable with this backend")
        broker_errors = [line for n, path in logs.items() for line in _read_from(path, marks[n]).splitlines()
                         if " ERROR " in line or "Unexpected error" in line]
        precondition(not broker_errors, f"the callback reported {error!r} and the brokers logged errors since the cut, "
                                        f"so a broker may have answered so: {broker_errors[:3]}")
        raise AssertionError(
            f"the ACCEPT sent into a connection that then dropped (the broker never received it: the cut is proven) "
            f"was reported to the callback as {error!r}, not as the dropped connection (DisconnectException) nor "
            f"as a broker's refusal of it sent again (the brokers logged no error since the cut)")
    again = c.poll_until(1, timeout=15 + LATE_AFTER_LOCK_S, ack="ACCEPT", settled=s.all_settled)
    if again or handed:  # the record came back (the dropped connection ended its delivery): accepted again
        results = c.commit_sync()
        assert all(r["error"] is None for r in results), f"the ACCEPT of the record given again returned {results}"
    s.assert_settled_by_the_broker("the record was accepted once the link was healed")
    s.assert_conforms()


@pytest.mark.rule("interrupt-blocking-call")
def test_an_interrupt_ends_a_blocking_poll(share_session):
    """Rows W5 ("while it is possible to use thread interrupts instead of wakeup() to abort a blocking operation (in
    which case, InterruptException will be raised)") and P13 ("@throws InterruptException if the calling thread is
    interrupted before or while this method is called"), gap G47 (driver contract 4, `poll_once`'s `interrupt_after`):
    a 20 s poll on an idle topic, its thread interrupted 1 s in, ends with InterruptException within 10 s; the poll
    after (the thread's interrupt flag cleared by the driver) delivers a record produced then."""
    _a_blocking_poll_ended_by_another_thread(share_session(topic_partitions=1), "interrupt_thread", "interrupt_after",
                                             "InterruptException", "interrupted by another thread")


@pytest.mark.rule("thread-guard")
def test_a_second_thread_calling_during_a_poll_is_refused(share_session):
    """Rows W2 ("Unsynchronized access will result in ConcurrentModificationException.") and W7 (the KIP's same
    sentence), gap G49 (driver contract 4, `poll_concurrent`): poll(2 s) on the driver's thread while a second thread
    calls subscription() again and again (KafkaShareConsumer.poll is synchronized, so two polls would take turns):
    one of them raises ConcurrentModificationException; the consumer then goes on (a record produced after is
    delivered and accepted)."""
    s = share_session(topic_partitions=1)
    s.require("thread_guard", "commit_sync")
    c = s.consumer()
    errors = c.poll_concurrent(2.0)
    assert any(e and "ConcurrentModification" in e for e in errors), \
        f"a poll and another thread's calls of one consumer at once raised {errors}: neither was " \
        f"ConcurrentModificationException"
    _goes_on(s, c, "the concurrent calls")


@pytest.mark.rule("renew-ends-on-disconnect")
def test_a_renewed_delivery_ends_when_its_connection_drops(share_session, kafka_cluster):
    """Row R8's connection half (KIP-1222: "If the leadership of the partition for a record being delivered changes or
    the application's connection to the leader broker is disconnected, the current delivery attempt ends."), gap G39:
    a consumer on a lane of its own RENEWs its record and commits the RENEW (its 30 s lock starts again); its link to
    the partition's leader is cut, and the heal drops the connection; another consumer is then given the record, with
    the next delivery count, within 15 s of the drop, long before the renewed lock would end."""
    _needs_lanes(kafka_cluster)
    s = share_session(topic_partitions=1, lock_duration_ms=30000)
    s.require("ack:RENEW", "commit_sync")
    s.produce(1)
    c = s.consumer(lane=0)
    got = c.poll_until(1)
    precondition(len(got) == 1, f"the consumer was given {len(got)} of 1 record")
    assert c.ack(got, "RENEW") is None, f"the client refused the RENEW: {c.last_error}"
    results = c.commit_sync()
    precondition(results and all(r["error"] is None for r in results), f"the RENEW was not committed: {results}")
    renewed = time.monotonic()
    with _cut_off_the_leader(s, kafka_cluster, c):
        pass  # proven cut; the heal on the way out drops the connections open through it
    dropped = time.monotonic()
    other = s.consumer()
    again = other.poll_until(1, timeout=15.0)
    took = time.monotonic() - dropped
    assert again and again[0].key == got[0].key and again[0].delivery_count > got[0].delivery_count, (
        f"{took:.1f} s after the renewed record's connection dropped ({dropped - renewed:.1f} s after the RENEW of a "
        f"30 s lock) another consumer was given {again}, not the record with the next delivery count: the delivery "
        f"attempt must end with the connection")
    assert other.ack(again, "ACCEPT") is None, f"the client refused the ACCEPT: {other.last_error}"
    other.commit_ok()
    s.assert_settled_by_the_broker("the record given again was accepted")
    s.assert_conforms()
