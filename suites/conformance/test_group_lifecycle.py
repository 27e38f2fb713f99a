"""KIP-932 group lifecycle and membership: states EMPTY / STABLE / DEAD, describe (members,
assignment, coordinator), close() leaving the group at once, listing by type, deleting only an empty
group, more consumers than partitions all making progress, and a member that stops heartbeating losing
its records."""

import signal
import time

import pytest

from harness.conformance import precondition
from harness.sys.wait import WaitTimeout, wait_until

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.kip("lifecycle")]


def _state(s):
    return s.describe().get("state", "").upper()


ALTER_HIDDEN_41 = (
    "Kafka 4.1.0-4.1.2 deviate from KIP-932 here (fixed in 4.2.0, KAFKA-19440): the group coordinator refuses "
    "to alter a non-empty group's offsets (ShareGroup.validateEmptyGroup: NON_EMPTY_GROUP as the response's "
    "top-level error), but the broker's KafkaApis.handleAlterShareGroupOffsetsRequest merges only the "
    "per-partition results and the Admin client's AlterShareGroupOffsetsHandler never reads the top-level "
    "error, so the refusal reaches the application as a success; the offsets are not altered")


def test_states_members_assignment_and_coordinator(share_session):
    """A group with a member is STABLE and describes its member, assignment and coordinator; with
    every member gone it is EMPTY."""
    s = share_session(topic_partitions=2)
    s.produce(2, partition=None)
    c = s.consumer()
    c.poll_until(2, ack="ACCEPT")  # a client may join only when it first polls (the Java one does)
    c.commit_sync()
    wait_until(lambda: c.poll(0.2) == [] and _state(s) == "STABLE" and len(s.describe()["members"]) == 1
               and len(s.describe()["members"][0]["partitions"]) == 2, timeout=30,
               what="the group to be STABLE with its one member assigned both partitions", interval=0.5)
    described = s.describe()
    assert sorted(p for _, p in described["members"][0]["partitions"]) == [0, 1]
    assert described["coordinator"] in s.cluster.broker_ids, described
    c.close()
    wait_until(lambda: _state(s) == "EMPTY", timeout=30, what="the group to be EMPTY", interval=0.5)
    assert s.describe()["members"] == []
    s.assert_conforms()


@pytest.mark.rule("close-leaves")
def test_close_leaves_the_group(share_session):
    """close() leaves the group: soon after its return (half the group's session timeout, at most 10 s),
    with the client's process still running, the member is gone from the group's description. (A member
    that did not leave stays until it has not heartbeated for the whole session timeout.)"""
    s = share_session(topic_partitions=1)
    s.produce(1)
    c = s.consumer()
    c.poll_until(1, ack="ACCEPT")  # a client may join only when it first polls (the Java one does)
    c.commit_ok()
    wait_until(lambda: c.poll(0.2) == [] and len(s.describe()["members"]) == 1, timeout=30,
               what="the consumer to be the group's one member", interval=0.5)
    c.close(wait_exit=False)  # measured from close()'s return, the process still running
    within = s.after_close_s
    try:
        wait_until(lambda: s.describe()["members"] == [], timeout=within, what="the member to leave",
                   interval=0.5)
    except WaitTimeout:  # not the harness's wait that failed: the client's close()
        after = s.describe()
        precondition("members" in after, f"the group's description could not be read: {after}")
        raise AssertionError(f"close() returned but the member was still in the group {within:.0f} s later "
                             f"(its process still running): {after['members']}") from None
    c.close()
    s.assert_conforms()


def test_listing_groups_shows_the_share_type(share_session):
    """Listing groups shows a share group with type SHARE."""
    s = share_session(topic_partitions=1)
    s.produce(1)
    c = s.consumer()
    c.poll_until(1, ack="ACCEPT")
    c.commit_sync()
    listed = {g["group"]: g for g in s.admin("list")["groups"]}
    assert s.group in listed and (listed[s.group]["type"] or "").upper() == "SHARE", listed.get(s.group)
    s.assert_conforms()


def test_delete_share_group_only_when_empty(share_session):
    """Deleting a share group with members fails (GroupNotEmpty); an empty one is deleted (then DEAD
    or unknown)."""
    s = share_session(topic_partitions=1)
    s.produce(1)
    c = s.consumer()
    c.poll_until(1, ack="ACCEPT")
    c.commit_sync()
    wait_until(lambda: _state(s) == "STABLE", timeout=30, what="the group to be STABLE", interval=0.5)
    refused = s.admin("delete", s.group)
    assert refused.get("error") == "GroupNotEmptyException", refused
    c.close()
    wait_until(lambda: _state(s) == "EMPTY", timeout=30, what="the group to be EMPTY", interval=0.5)
    assert s.admin("delete", s.group) == {"deleted": True}
    after = s.describe()
    assert after.get("state", "").upper() == "DEAD" or after.get("error") == "GroupIdNotFoundException", after
    s.assert_conforms(without=("durable-state",))  # a deleted group has no durable state left to read


@pytest.mark.kip("start-offsets")
def test_alter_offsets_only_on_an_empty_group_and_redelivers_from_there(share_session):
    """Altering share-group offsets needs an empty group; after it the group starts at the new offset,
    so records from there are delivered again."""
    s = share_session(topic_partitions=1)
    s.produce(5)
    c = s.consumer()
    c.poll_until(5, ack="ACCEPT")
    c.commit_sync()
    wait_until(lambda: _state(s) == "STABLE", timeout=30, what="the group to be STABLE", interval=0.5)
    # to be refused, so nothing to record in the history (a success is the failure, or 4.1's deviation)
    before = s.read_start_offsets()
    refused = s.admin("alter-offsets", s.group, s.topic, "0", "2")
    if refused.get("error") is None:
        refused["start offsets before and after it"] = (before, _xfail_if_refusal_hidden(s, before))
    assert refused.get("error") == "GroupNotEmptyException", refused
    c.close()
    wait_until(lambda: _state(s) == "EMPTY", timeout=30, what="the group to be EMPTY", interval=0.5)
    assert s.alter_offset(0, 2) == {"altered": True}
    again = s.consumer().poll_until(3, ack="ACCEPT")
    assert sorted(r.offset for r in again) == [2, 3, 4]
    s.consumers[-1].commit_sync()
    s.assert_conforms()


def _xfail_if_refusal_hidden(s, before: dict) -> dict:
    """xfail, with the evidence, if and only if this is 4.1's documented deviation: the release is of the 4.1
    line and the group's start offset did not move (the refusal hidden, nothing altered). Else return the
    start offsets read after the alter (for the caller's failure)."""
    from harness.kafka.versions import release_line
    from harness.run import kafka_version_of
    version = kafka_version_of(s.cluster, s.spec)
    after = s.read_start_offsets()
    if release_line(version).line == "4.1" and 0 in before and after.get(0) == before[0] != 2:
        pytest.xfail(f"{ALTER_HIDDEN_41}. Evidence of this run ({s.run_dir}): on Kafka {version}, altering the "
                     f"STABLE group's start offset of partition 0 to 2 returned no error, and the start offset "
                     f"read before and after it is {before[0]} (unchanged, not 2)")
    return after


@pytest.mark.rule("shared-partition")
def test_more_consumers_than_partitions_all_make_progress(share_session):
    """Three consumers of one partition all receive records while records keep arriving (share
    groups are not limited to one consumer per partition)."""
    s = share_session(topic_partitions=1, max_poll_records=2)
    consumers = [s.consumer() for _ in range(3)]
    received = {c.name: 0 for c in consumers}
    for turn in range(30):  # records arrive in small lots; who polls first turns round
        s.produce(2)
        for c in consumers[turn % 3:] + consumers[:turn % 3]:
            batch = c.poll(0.5)
            received[c.name] += len(batch)
            if batch:
                c.ack(batch, "ACCEPT")
                c.commit_sync()
        if turn >= 5 and all(received.values()):
            break
    assert all(received.values()), f"a consumer made no progress: {received}"
    drain = consumers[0]
    while batch := drain.poll(3.0):
        drain.ack(batch, "ACCEPT")
        drain.commit_sync()
    for c in consumers[1:]:  # what the others still hold comes back when they close
        c.close()
    while batch := drain.poll(3.0):
        drain.ack(batch, "ACCEPT")
        drain.commit_sync()
    s.assert_conforms()


@pytest.mark.rule("session-timeout")
def test_member_that_stops_heartbeating_is_removed_and_its_records_move(share_session):
    """A member that stops heartbeating (SIGSTOP) is removed from the group after the session
    timeout, and the records it acquired become available to another consumer (at the latest when
    their acquisition locks expire). (Issue 53: the group's session timeout is the broker's least, 6 s, not the
    10 s the harness's brokers default to, and the locks last 10 s, not 15: 4.4.0 hands the records on when they
    expire, which the test waits for.)"""
    lock_s = 10.0
    s = share_session(topic_partitions=1, lock_duration_ms=int(lock_s * 1000),
                      group_configs={"share.session.timeout.ms": "6000"})
    s.produce(3)
    stuck = s.consumer()
    held = stuck.poll(10)
    held_at = time.monotonic()
    precondition(held, "the consumer to be stopped was given no record")
    other = s.consumer()  # only now: a client fetching before its first poll cannot take the records first
    taken: list = []

    def both_members() -> bool:  # a client may join only when it first polls
        batch = other.poll(0.2)
        if batch:  # (none should come: `stuck` holds all three)
            other.ack(batch, "ACCEPT")
            taken.extend(batch)
        return len(s.describe().get("members", [])) == 2
    wait_until(both_members, timeout=30, what="both members", interval=0.5)
    if {r.key for r in taken} & {r.key for r in held}:  # a live member's records went to another: only past the lock
        precondition(time.monotonic() - held_at < lock_s, f"the second member joined only after the first's "
                                                          f"{lock_s:.0f} s locks expired")
        pytest.fail(f"records a live member held (within their {lock_s:.0f} s lock) went to another consumer: {taken}")
    fault = {"id": "conformance-pause", "fault": "consumer-pause", "effects": ["session-loss"],
             "processes": [stuck.name], "targets": [stuck.name]}
    s.history.append("nemesis", "ok", "fault-start", fault)
    stuck.driver.proc.signal(signal.SIGSTOP)
    try:
        wait_until(lambda: len(s.describe().get("members", [])) == 1, timeout=45,
                   what=f"{stuck.name} to be removed after the session timeout", interval=0.5)
        again = other.poll_until(len(held), timeout=30, ack="ACCEPT")
        assert {r.key for r in held} <= {r.key for r in again}, (held, again)
        other.commit_sync()
    finally:
        stuck.driver.proc.signal(signal.SIGCONT)
        s.history.append("nemesis", "ok", "fault-heal", {"id": "conformance-pause", "fault": "consumer-pause"})
    s.assert_conforms()


NAMESPACE_ERRORS = ("GROUP_ID_NOT_FOUND", "INCONSISTENT_GROUP_PROTOCOL")


def _namespace_error(err) -> str:
    """The namespace error a consumer-group client reported (librdkafka may wrap it in _FATAL), else
    what it reported."""
    from harness.conformance import error_is
    text = f"{err.name()}: {err.str()}"
    return next((code for code in NAMESPACE_ERRORS if error_is(text, code)), text)


def test_share_and_consumer_groups_share_one_namespace(share_session):
    """Group ids are one namespace across group types: a share consumer cannot join a consumer
    group's id, and a consumer-group member cannot join a share group's id; each is refused
    (GROUP_ID_NOT_FOUND or INCONSISTENT_GROUP_PROTOCOL) and given no record."""
    s = share_session(topic_partitions=1)
    s.produce(3)
    taken = f"{s.group}-consumers"
    member = s.consumer_group_member(taken)
    try:
        wait_until(lambda: (lambda m: m is not None and m.error() is None)(member.poll(0.5)), timeout=60,
                   what="the consumer group to consume", interval=0.0)
        listed = {g["group"]: g for g in s.admin("list")["groups"]}
        assert (listed.get(taken, {}).get("type") or "").upper() == "CONSUMER", listed.get(taken)
        intruder = s.consumer(group=taken)
        intruder.poll_until_error(NAMESPACE_ERRORS)
        assert intruder.records_given() == [], "a share consumer was given records under a consumer group's id"
        intruder.close()
    finally:
        member.close()
    c = s.consumer()
    got = c.poll_until(3, ack="ACCEPT")
    c.commit_sync()
    assert len(got) == 3
    other = s.consumer_group_member(s.group)  # the share group is live (STABLE, c still a member)
    refused, given = {}, []

    def failed() -> bool:
        msg = other.poll(0.5)
        if msg is not None and msg.error() is None:
            given.append(msg.offset())
        elif msg is not None:
            refused["error"] = _namespace_error(msg.error())
        return "error" in refused
    try:
        wait_until(failed, timeout=30, interval=0.0, what="the consumer-group member to be refused")
    finally:
        other.close()
    assert refused["error"] in NAMESPACE_ERRORS, refused
    assert given == [], f"a consumer-group member was given offsets {given} under a share group's id"
    s.assert_conforms()


def test_the_group_size_limit_refuses_one_member_more(own_session):
    """A share group holds at most group.share.max.size members: one more is refused with
    GROUP_MAX_SIZE_REACHED and given no record, while the members go on consuming."""
    s = own_session()
    limit = int(s.broker_config("group.share.max.size"))
    assert limit <= 5, f"group.share.max.size is {limit}: the suite's own cluster sets it low to test it"
    members = [s.consumer() for _ in range(limit)]
    for m in members:
        assert m.poll(0.5) == []  # joins (the Java client joins on its first poll)
    wait_until(lambda: len(s.describe().get("members", [])) == limit, timeout=30, interval=0.5,
               what=f"the group to have its {limit} members")
    extra = s.consumer()
    extra.poll_until_error(("GROUP_MAX_SIZE_REACHED",))
    assert extra.records_given() == [], "a member past the group size limit was given records"
    extra.close()
    for m in members[1:]:
        m.close()
    s.produce(4)
    got = members[0].poll_until(4, ack="ACCEPT")
    members[0].commit_sync()
    assert sorted(r.offset for r in got) == [0, 1, 2, 3]
    s.assert_conforms()
