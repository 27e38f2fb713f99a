"""KIP-932 acknowledgement: implicit and explicit modes, ACCEPT / RELEASE / REJECT, commit results,
the commit callback, acknowledging after the lock expired, and close releasing acquired records.

Every test also checks its whole history against the reference model (`assert_conforms`)."""

import time

import pytest

from harness.conformance import LATE_AFTER_LOCK_S as LATE_S
from harness.conformance import error_is, precondition

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.kip("acknowledgement")]

QUIET_S = 3.0  # how long a consumer polls to show that nothing more is delivered


def _offsets(records):
    return sorted(r.offset for r in records)


@pytest.mark.rule("ack-accept")
def test_explicit_accept_is_final(share_session):
    """Records acknowledged ACCEPT and committed are never delivered again."""
    s = share_session(topic_partitions=1)
    s.produce(10)
    c = s.consumer()
    got = c.poll_until(10, ack="ACCEPT")
    assert _offsets(got) == list(range(10)) and all(r.delivery_count == 1 for r in got)
    c.commit_ok()
    s.assert_settled_by_the_broker("commitSync reported every ACCEPT committed")
    assert c.poll(QUIET_S) == [], "an accepted record was delivered again"
    s.assert_conforms()


@pytest.mark.rule("ack-release")
def test_release_makes_records_available_again_with_a_higher_count(share_session):
    """RELEASE returns records to Available: they are delivered again with delivery count 2."""
    s = share_session(topic_partitions=1)
    s.produce(5)
    c = s.consumer()
    first = c.poll_until(5, ack="RELEASE")
    assert _offsets(first) == list(range(5)), f"{_offsets(first)} of offsets 0-4 came"
    c.commit_ok()
    again = c.poll_until(5, ack="ACCEPT")
    assert _offsets(again) == _offsets(first), \
        f"released records did not come back: offsets {_offsets(again)} were delivered again, not {_offsets(first)}"
    assert all(r.delivery_count == 2 for r in again), [(r.offset, r.delivery_count) for r in again]
    c.commit_sync()
    s.assert_conforms()


@pytest.mark.rule("ack-reject")
def test_reject_archives_records(share_session):
    """REJECT archives records: they are never delivered again."""
    s = share_session(topic_partitions=1)
    s.produce(5)
    c = s.consumer()
    got = c.poll_until(5, ack="REJECT")
    assert len(got) == 5
    c.commit_ok()
    s.assert_settled_by_the_broker("commitSync reported every REJECT committed")
    assert c.poll(QUIET_S) == [], "a rejected record was delivered again"
    s.assert_conforms()


@pytest.mark.rule("implicit-mode")
def test_implicit_mode_next_poll_accepts_the_previous_batch(share_session):
    """In implicit mode the next poll (or commit) accepts every record of the previous batch."""
    s = share_session(topic_partitions=1, max_poll_records=4, lock_duration_ms=5000)
    c = s.consumer(mode="implicit")
    batches = []
    for _ in range(3):  # a lot at a time, so that each poll has a previous batch whatever the client's batching
        s.produce(4)
        batch = c.poll_until(4, timeout=30)
        precondition(batch, f"a poll gave nothing after {sum(map(len, batches))} records")
        batches.append(batch)
    precondition(len(batches) >= 2, "fewer than two polls: no poll had a previous batch to accept")
    if c.features is None or "implicit_batch_held" in c.features:
        c.commit_ok()  # accepts the last batch
    else:  # a framework that commits each batch its listener returned (spring-kafka): nothing left to carry
        c.commit_sync()
    s.assert_settled_by_the_broker("the polls and the commit after the batches reported them accepted")
    # and the records' own view: a batch that was not really accepted comes back to another consumer once its
    # 5 s lock expires
    other = s.consumer(mode="implicit")
    again = other.poll(5.0 + QUIET_S)
    assert again == [], (f"records of the polled batches came back after their lock: {_offsets(again)}; the poll "
                         f"(or commit) after them did not accept them")
    assert c.poll(QUIET_S) == [], "an implicitly accepted record came again"
    s.assert_conforms()


@pytest.mark.rule("commit-sync-results")
def test_commit_sync_returns_a_result_per_partition(share_session):
    """commitSync returns one result for each share-partition whose acknowledgements it carried."""
    s = share_session(topic_partitions=3)
    for p in range(3):
        s.produce(4, partition=p)
    c = s.consumer()
    seen: set = set()
    partitions_with_results: set = set()
    while len(seen) < 12:
        batch = c.poll(10)
        assert batch, f"only {len(seen)} of 12 records came"
        seen.update(r.key for r in batch)
        c.ack(batch, "ACCEPT")
        results = c.commit_sync()
        assert sorted((r["partition"], r["error"]) for r in results) == \
            [(p, None) for p in sorted({r.partition for r in batch})], (results, batch)
        partitions_with_results.update(r["partition"] for r in results)
    assert partitions_with_results == {0, 1, 2}
    s.assert_settled_by_the_broker("commitSync returned success for every partition's ACCEPTs")
    s.assert_conforms()


@pytest.mark.rule("commit-async-callback")
def test_commit_async_reports_through_the_callback(share_session):
    """commitAsync's outcome arrives through the acknowledgement commit callback, per partition."""
    from harness.sys.wait import wait_until
    s = share_session(topic_partitions=1)
    s.produce(5)
    c = s.consumer()
    got = c.poll_until(5, ack="ACCEPT")
    assert len(got) == 5
    c.commit_async()
    # callbacks are served while the client polls
    wait_until(lambda: c.poll(0.5) == [] and s.ops(c.name, "callback"), timeout=30,
               what="the acknowledgement commit callback")
    [callback] = [op for op in s.ops(c.name, "callback")]
    assert callback.value["error"] is None
    assert sorted(o for part in callback.value["partitions"] for o in part["offsets"]) == list(range(5))
    s.assert_settled_by_the_broker("the commit callback reported every ACCEPT committed")
    s.assert_conforms()


def _expired_and_taken(s, mode: str = "explicit"):
    """A record held past its 2 s lock by `late` (a `mode` consumer) and now held by `other` (with a higher
    count): (late, its copy, other, other's copy). Inconclusive if the record did not move."""
    s.produce(1)
    late = s.consumer(mode=mode)
    mine = late.poll_until(1)
    precondition(len(mine) == 1, f"the first consumer was not given the record: {mine}")
    [mine] = mine
    other = s.consumer()  # only now: a client fetching before its first poll cannot take the record first
    got = other.poll_until(1, timeout=2 + LATE_S)  # only after the lock expired
    precondition(len(got) == 1 and got[0].key == mine.key and got[0].delivery_count > mine.delivery_count,
                 f"the record held past its 2 s lock did not reach another consumer within {2 + LATE_S} s with a "
                 f"higher count (rule lock-expiry decides that): {got}")
    # (that it came only after the lock expired: lock-expiry's test, and the model's exclusive check)
    return late, mine, other, got[0]


def _new_holder_accepts(other, theirs) -> None:
    other.ack([theirs], "ACCEPT")
    results = other.commit_sync()
    precondition(results and all(r["error"] is None for r in results),
                 f"the new holder's ACCEPT failed ({results}): its 2 s lock ran out during the test")


@pytest.mark.rule("commit-async-callback")
def test_commit_async_reports_a_refused_acknowledgement_through_the_callback(share_session):
    """The callback brings a refusal too: commitAsync of an ACCEPT the broker refuses (the record's lock
    expired and another consumer holds it) reports INVALID_RECORD_STATE for its partition, not success."""
    from harness.sys.wait import wait_until
    s = share_session(topic_partitions=1, lock_duration_ms=2000)
    late, mine, other, theirs = _expired_and_taken(s)
    taken = time.monotonic()
    refused = late.ack([mine], "ACCEPT")
    precondition(refused is None, f"the client refused the ACCEPT itself ({refused}): nothing reached the broker")
    late.commit_async()
    precondition(time.monotonic() - taken < 1.5, "the ACCEPT was committed so late that the new holder's 2 s lock "
                                                 "may have expired (the record free again: no refusal due)")
    handed = []  # callbacks are served while the client polls; nothing is left for it to hand out

    def called_back():
        handed.extend(late.poll(0.5))
        return not handed and s.ops(late.name, "callback")
    wait_until(lambda: handed or called_back(), timeout=30, what="the acknowledgement commit callback")
    precondition(all(r.delivery_count <= theirs.delivery_count for r in handed),
                 f"the consumer acquired the record again (offset, count) "
                 f"{[(r.offset, r.delivery_count) for r in handed]} past the new holder's 2 s lock: its ACCEPT may "
                 f"rightly have been taken")
    reported = [(op.value["error"], sorted(o for part in op.value["partitions"] for o in part["offsets"]))
                for op in s.ops(late.name, "callback")]
    assert not reported or any(error_is(error, "INVALID_RECORD_STATE") and mine.offset in offsets
                               for error, offsets in reported), \
        (f"the callback did not report INVALID_RECORD_STATE for an ACCEPT of offset {mine.offset}, whose lock had "
         f"expired and which another consumer held: it reported (error, offsets) {reported}")
    precondition(not handed, f"while it waited for the callback the consumer was handed (offset, count) "
                             f"{[(r.offset, r.delivery_count) for r in handed]}, stale copies of a record another "
                             f"consumer held with count {theirs.delivery_count} (rule no-stale-records judges that, "
                             f"not this one)")
    _new_holder_accepts(other, theirs)
    s.assert_conforms()


@pytest.mark.rule("poll-swallows-commit-failure")
@pytest.mark.parametrize("mode", ["explicit", "implicit"])
def test_a_poll_that_commits_a_refused_acknowledgement_raises_nothing(share_session, mode):
    """Rows M4 and M11 (KafkaShareConsumer Javadoc, both modes: "Calling poll(Duration) ... commits the
    acknowledgements to Kafka asynchronously. In this case, no exception is thrown by a failure to commit the
    acknowledgements."), gap G10: the consumer's ACCEPT of a record whose lock expired (another consumer holds it)
    goes with its next poll; the broker refuses it (the callback says INVALID_RECORD_STATE) and no poll raised."""
    from harness.sys.wait import WaitTimeout, wait_until
    s = share_session(topic_partitions=1, lock_duration_ms=2000)
    s.require("callback")  # the refusal must be seen to have happened, or nothing failed to be thrown
    if mode == "implicit":  # the batch must stay held past its lock until the next poll (spring-kafka's container
        s.require("implicit_batch_held")  # commits it once its listener returned: nothing is left to refuse)
    late, mine, other, theirs = _expired_and_taken(s, mode)
    if mode == "explicit":
        refused = late.ack([mine], "ACCEPT")
        precondition(refused is None, f"the client refused the ACCEPT itself ({refused}): nothing reached the broker")
    handed, raised = [], []  # (in implicit mode the next poll accepts the batch before: the record held past its lock)

    def poll() -> None:
        handed.extend(late.poll(0.5))
        if late.last_error is not None:
            raised.append(late.last_error)

    def thrown() -> list[str]:
        """What the consumer's polls threw that names the refusal (a poll's error, or an error the driver printed)."""
        texts = raised + [f"{op.value.get('code')} {op.value.get('message')}" for op in s.ops(late.name, "error")]
        return [t for t in texts if error_is(t, "INVALID_RECORD_STATE")]

    def refusal_seen() -> bool:
        poll()
        return bool(handed) or bool(thrown()) or any(error_is(op.value["error"] or "", "INVALID_RECORD_STATE")
                                                     for op in s.ops(late.name, "callback"))

    def nothing_handed() -> None:
        precondition(all(r.delivery_count <= theirs.delivery_count for r in handed),
                     f"the consumer acquired the record again {[(r.offset, r.delivery_count) for r in handed]} past "
                     f"the new holder's 2 s lock: its ACCEPT may rightly have been taken")
        precondition(not handed, f"while it polled the consumer was handed (offset, count) "
                                 f"{[(r.offset, r.delivery_count) for r in handed]}, stale copies of a record another "
                                 f"consumer held with count {theirs.delivery_count} (rule no-stale-records judges that, "
                                 f"not this one)")
    try:
        wait_until(refusal_seen, timeout=30, interval=0.0, what="the refused ACCEPT's callback")
    except WaitTimeout:
        precondition(False, f"no callback reported the ACCEPT of offset {mine.offset} refused within 30 s (rule "
                            f"commit-async-callback judges that): no failure to commit was seen")
    nothing_handed()
    _new_holder_accepts(other, theirs)  # the record settled: nothing is left for the polls below to hand out
    quiet_until = time.monotonic() + QUIET_S  # a client may throw the refusal at a later poll
    while not thrown() and not handed and time.monotonic() < quiet_until:
        poll()
    nothing_handed()
    assert not thrown(), \
        (f"a {mode}-mode poll that committed an ACCEPT the broker refused (offset {mine.offset}: its lock had expired "
         f"and another consumer held it) threw: {thrown()}")
    s.assert_conforms()


@pytest.mark.rule("close-continues-after-failure")
def test_a_close_whose_commit_fails_still_leaves_the_group(share_session):
    """Rows Z4, Z5, Z16 (KafkaShareConsumer Javadoc, close(): "This close operation will attempt all shutdown steps
    even if one of them fails. It logs all encountered errors, continues to execute the next steps, and finally
    throws the first error found."), gap G15: close() with an ACCEPT pending that the broker refuses (the record's
    lock expired and another consumer holds it) still leaves the group within the time close rules allow; if close
    reports an error, it is that first failure."""
    from harness.sys.wait import WaitTimeout, wait_until
    s = share_session(topic_partitions=1, lock_duration_ms=2000)
    late, mine, other, theirs = _expired_and_taken(s)
    refused = late.ack([mine], "ACCEPT")
    precondition(refused is None, f"the client refused the ACCEPT itself ({refused}): nothing reached the broker")
    late.close(wait_exit=False)  # measured from close()'s return (what close did is in the history by then)
    closed = time.monotonic()
    reported = [op.value.get("error") for op in s.ops(late.name, "close") if op.type == "info"]
    failed = any(error_is(op.value["error"] or "", "INVALID_RECORD_STATE") for op in s.ops(late.name, "callback"))
    precondition(failed or any(e and error_is(e, "INVALID_RECORD_STATE") for e in reported),
                 "neither a callback nor close() reported the pending ACCEPT refused: no shutdown step was seen to fail "
                 "(a driver without the callback cannot show it; a close() that sent it after the new holder's 2 s lock "
                 "found the record free again)")
    other.ack([theirs], "ACCEPT")  # settled at once, before the new holder's 2 s lock runs out; judged below
    settled = other.commit_sync()
    within = s.after_close_s

    def late_gone() -> bool:
        members = s.describe().get("members")
        return members is not None and len(members) == 1
    try:
        wait_until(late_gone, timeout=max(1.0, within - (time.monotonic() - closed)), interval=0.5,
                   what="the closed member to leave")
    except WaitTimeout:
        after = s.describe()
        precondition("members" in after, f"the group's description could not be read: {after}")
        raise AssertionError(f"close() with an ACCEPT pending that the broker refused returned, but the member was "
                             f"still in the group {within:.0f} s after close() returned: {after['members']}") from None
    assert all(e is None or error_is(e, "INVALID_RECORD_STATE") for e in reported), \
        f"close() reported {reported}, not the first failure (the refused ACCEPT of offset {mine.offset})"
    precondition(settled and all(r["error"] is None for r in settled),
                 f"the new holder's ACCEPT failed ({settled}): its 2 s lock ran out during the test")
    late.close()
    s.assert_conforms()


@pytest.mark.rule("ack-expired-fails")
def test_acknowledging_after_the_lock_expired_fails(share_session):
    """Acknowledging a record whose acquisition lock expired (it went to another consumer) fails
    with the invalid-record-state error, and the record's new owner keeps it."""
    s = share_session(topic_partitions=1, lock_duration_ms=2000)
    late, mine, other, theirs = _expired_and_taken(s)
    late.ack([mine], "ACCEPT")
    results = late.commit_sync()
    errors = [r["error"] for r in results if r["partition"] == mine.partition]
    assert errors and error_is(errors[0], "INVALID_RECORD_STATE"), \
        f"acknowledging a record whose lock had expired did not fail with INVALID_RECORD_STATE: results {results}"
    _new_holder_accepts(other, theirs)
    s.assert_conforms()


def _held_then_closed(s, mode: str):
    """Five records; a `mode` consumer polls a batch and closes while another consumer is ready; the other
    polls for all five until `after_close_s` from close()'s return: (first, held, second, what the second got,
    the time allowed)."""
    s.produce(5)
    first = s.consumer(mode=mode)
    held = first.poll(10)
    precondition(held, f"the {mode} consumer was given no record")
    second = s.consumer()  # started first: the time allowed is the release's, not a client's start-up
    first.close(wait_exit=False)  # measured from close()'s return, the first's process still running
    closed = time.monotonic()
    # all five: the held ones released, the others never held
    within = s.after_close_s  # far below their 60 s lock, and below the session timeout
    again = second.poll_until(5, timeout=max(1.0, within - (time.monotonic() - closed)), ack="ACCEPT")
    return first, held, second, again, within


@pytest.mark.rule("close-releases")
def test_close_releases_acquired_records(share_session):
    """Closing a consumer releases the records it still holds: another consumer gets them at once,
    long before their locks would have expired."""
    s = share_session(topic_partitions=1, lock_duration_ms=60000)
    first, held, second, again, within = _held_then_closed(s, "explicit")
    assert {r.key for r in held} <= {r.key for r in again}, \
        (f"close() returned but the records it held did not reach another consumer within {within:.0f} s "
         f"(their lock is 60 s): got {_offsets(again)} of {_offsets(held)}")
    second.commit_ok()
    first.close()
    s.assert_conforms()


def _callback_offsets(s, c) -> tuple[list[int], list]:
    """The offsets `c`'s acknowledgement commit callbacks named so far, and their errors."""
    calls = s.ops(c.name, "callback")
    return (sorted(o for op in calls for part in op.value["partitions"] for o in part["offsets"]),
            [op.value["error"] for op in calls if op.value["error"] is not None])


@pytest.mark.rule("close-commits-pending")
def test_close_commits_the_pending_acknowledgements(share_session):
    """close() commits the acknowledgements still pending: records ACCEPTed and never committed (no commit
    call, no poll after them) are settled by the broker once close() returned."""
    s = share_session(topic_partitions=1, lock_duration_ms=60000)
    s.produce(5)
    c = s.consumer()
    got = c.poll_until(5, ack="ACCEPT")  # (a poll after a batch carries that batch's ACCEPTs; the last stays pending)
    precondition(len(got) == 5, f"the consumer was given {len(got)} of 5 records")
    c.close(wait_exit=False)  # measured from close()'s return, the process still running
    s.assert_settled_by_the_broker("close() returned with the last batch's ACCEPTs pending")
    c.close()
    s.assert_conforms()


@pytest.mark.rule("explicit-poll-commits")
def test_an_explicit_mode_poll_commits_the_acknowledgements(share_session):
    """In explicit mode the next poll commits the acknowledgements made since the last commit: with no commit
    called, the callback reports every ACCEPTed offset without error, and the broker settles them."""
    from harness.sys.wait import wait_until
    s = share_session(topic_partitions=1)
    s.require("callback")
    s.produce(5)
    c = s.consumer()
    got = c.poll_until(5, ack="ACCEPT")
    precondition(len(got) == 5, f"the consumer was given {len(got)} of 5 records")
    # callbacks are served while the client polls; no commit is called
    wait_until(lambda: c.poll(0.5) == [] and _callback_offsets(s, c)[0] == list(range(5)), timeout=30,
               what="the acknowledgement commit callback of the ACCEPTs the polls carried")
    offsets, errors = _callback_offsets(s, c)
    assert not errors, f"the callback reported errors for the ACCEPTs the polls carried: {errors}"
    s.assert_settled_by_the_broker("the callback reported every ACCEPT the polls carried committed")
    s.assert_conforms()


@pytest.mark.rule("implicit-commit-async")
def test_an_implicit_mode_commit_async_accepts_the_last_batch(share_session):
    """In implicit mode commitAsync accepts every record the last poll returned and commits it: the broker
    settles them with no further poll, and the callback (served by a later poll) reports them without error."""
    from harness.sys.wait import wait_until
    s = share_session(topic_partitions=1, lock_duration_ms=60000)
    s.require("implicit", "commit_async", "callback")
    s.produce(5)
    c = s.consumer(mode="implicit")
    got = c.poll_until(5)  # (each poll accepts the batch before it)
    precondition(len(got) == 5, f"the consumer was given {len(got)} of 5 records")
    c.commit_async()
    # before any further poll (which would accept the batch itself)
    s.assert_settled_by_the_broker("commitAsync was called in implicit mode after the last poll")
    wait_until(lambda: c.poll(0.5) == [] and _callback_offsets(s, c)[0] == list(range(5)), timeout=30,
               what="the acknowledgement commit callbacks of the implicit acceptances")
    assert not _callback_offsets(s, c)[1], f"the callback reported errors: {_callback_offsets(s, c)[1]}"
    s.assert_conforms()


@pytest.mark.rule("implicit-close-releases")
def test_an_implicit_mode_close_releases_the_last_batch(share_session):
    """In implicit mode, close() releases the batch the last poll returned without acknowledging it: another
    consumer gets those records at once, with the next delivery count (the next poll or a commit would have
    accepted them; close does not)."""
    s = share_session(topic_partitions=1, lock_duration_ms=60000)
    s.require("implicit")
    first, held, second, again, within = _held_then_closed(s, "implicit")
    counts = {r.key: r.delivery_count for r in again}
    missing = [r.offset for r in held if r.key not in counts]
    assert not missing, (f"close() in implicit mode returned but the records of the last batch did not reach another "
                         f"consumer within {within:.0f} s (their lock is 60 s): offsets {missing} were accepted, or "
                         f"never released")
    assert all(counts[r.key] == r.delivery_count + 1 for r in held), \
        f"released, the last batch came back as {sorted(counts.items())}: not with the next delivery count"
    second.commit_ok()
    first.close()
    s.assert_conforms()


@pytest.mark.rule("explicit-poll-refused")
def test_an_explicit_mode_poll_before_the_batch_is_acknowledged_is_refused(share_session):
    """In explicit mode, a poll while records of the previous batch are unacknowledged is refused
    (IllegalStateException) and hands out nothing; once the batch is acknowledged the next poll works."""
    s = share_session(topic_partitions=1, lock_duration_ms=30000)
    s.produce(4)
    c = s.consumer()
    batch = c.poll(10.0)
    precondition(batch, "the first poll gave no record: the rule needs a batch left unacknowledged")
    again = c.poll(3.0)
    error = c.last_error or ""
    assert not again and "IllegalState" in error, \
        (f"the poll was not refused with the batch unacknowledged: it handed out {_offsets(again)} "
         f"(error: {error or 'none'})")
    assert c.ack(batch, "ACCEPT") is None, f"the batch could not be acknowledged after the refused poll: {c.last_error}"
    c.commit_ok()
    rest = c.poll_until(4 - len(batch), timeout=30, ack="ACCEPT") if len(batch) < 4 else []
    if rest:
        c.commit_ok()
    assert sorted(r.offset for r in batch + rest) == [0, 1, 2, 3], f"got {_offsets(batch + rest)}"
    s.assert_conforms()


@pytest.mark.rule("ack-renew")
@pytest.mark.requires(line="4.2")
def test_renew_extends_the_acquisition_lock(share_session):
    """RENEW (KIP-1222) keeps a record acquired by its holder past its lock duration: renewed before
    each lock ends, it goes to no other consumer, and its holder then accepts it. The holder renews the
    way its library's API has it: a library that returns a renewed record again (renew-hand-back,
    KafkaShareConsumer) renews the copy each poll returns; one whose next poll would accept it renews
    without polling."""
    s = share_session(topic_partitions=1, lock_duration_ms=6000)
    s.require("ack:RENEW")
    s.produce(1)
    holder = s.consumer()
    got = holder.poll_until(1)
    acquired = time.monotonic()
    precondition(len(got) == 1, f"the holder was not given the record: {got}")
    [held] = got
    other = s.consumer()  # only now: a client fetching before its first poll cannot take the record first
    precondition(time.monotonic() - acquired < 4.0, "starting the second consumer took most of the 6 s lock")
    hand_back = s.driver.supports("renew_hand_back")
    for _ in range(4):  # renewed, then 2 s of the other polling, 4 times: past the 6 s lock only if renewals hold it
        assert holder.ack([held], "RENEW") is None, f"the client refused the RENEW: {holder.last_error}"
        results = holder.commit_sync()
        assert results and all(r["error"] is None for r in results), f"the RENEW was not confirmed: {results}"
        assert other.poll(2.0) == [], "a renewed record went to another consumer"
        if hand_back:
            again = holder.poll_until(1)
            precondition(len(again) == 1 and again[0].key == held.key,
                         f"the renewed record was not returned again (rule renew-hand-back decides that): {again}")
            held = again[0]
    assert holder.ack([held], "ACCEPT") is None, f"the holder could not accept its renewed record: {holder.last_error}"
    results = holder.commit_sync()
    assert results and all(r["error"] is None for r in results), f"the ACCEPT after the renewals failed: {results}"
    assert other.poll(3.0) == [], "the renewed and accepted record went to another consumer"
    s.assert_conforms()


@pytest.mark.rule("renew-hand-back")
@pytest.mark.requires(line="4.2")
def test_a_renewed_record_is_returned_again_by_the_next_poll(share_session):
    """KafkaShareConsumer's contract (a library may declare it): a record renewed successfully is
    returned again by the next poll, with the same delivery count, and can then be accepted."""
    s = share_session(topic_partitions=1, lock_duration_ms=10000)
    s.require("ack:RENEW")
    s.produce(1)
    c = s.consumer()
    got = c.poll_until(1)
    precondition(len(got) == 1, f"the consumer was not given the record: {got}")
    [held] = got
    precondition(c.ack([held], "RENEW") is None, f"the client refused the RENEW (rule ack-renew): {c.last_error}")
    results = c.commit_sync()
    precondition(results and all(r["error"] is None for r in results), f"the RENEW was not confirmed: {results}")
    again = c.poll_until(1, timeout=10)
    assert [(r.key, r.delivery_count) for r in again] == [(held.key, held.delivery_count)], \
        f"the next poll returned {again}, not the renewed record {held}"
    assert c.ack(again, "ACCEPT") is None, f"the returned renewed record could not be accepted: {c.last_error}"
    results = c.commit_sync()
    assert results and all(r["error"] is None for r in results), f"the ACCEPT of the returned record failed: {results}"
    s.assert_conforms()


@pytest.mark.rule("unacked-stay-acquired")
def test_records_left_unacknowledged_stay_acquired(share_session):
    """In explicit mode the client does not acknowledge a record for the application: after the
    application acknowledged only the first record of a batch, committed and polled again, the others
    are still acquired by this consumer (presented again by that poll, as KIP-932 says, or, where the
    library refuses such a poll, as KafkaShareConsumer does, still open to acknowledgement), and a
    RELEASE of them brings them back with the next delivery count."""
    s = share_session(topic_partitions=1, lock_duration_ms=30000)
    s.produce(4)
    c = s.consumer()
    batch = c.poll(10.0)
    precondition(len(batch) >= 2, f"the first poll gave {len(batch)} record(s); the rule needs a batch of two or more")
    first, rest = batch[0], batch[1:]
    precondition(c.ack([first], "ACCEPT") is None, f"the client refused the ACCEPT of the first record: {c.last_error}")
    results = c.commit_sync()
    precondition(results and all(r["error"] is None for r in results), f"the ACCEPT of the first record failed: {results}")
    again = c.poll(3.0)  # the application polls again, the rest of the batch unacknowledged
    extra = [r for r in again if r.key not in {x.key for x in rest}]
    error = c.ack(rest, "RELEASE")
    assert error is None, (f"the client refused a RELEASE of records the application never acknowledged ({error}): "
                           f"it had acknowledged them itself")
    if extra:
        c.ack(extra, "ACCEPT")
    results = c.commit_sync()
    assert results and all(r["error"] is None for r in results), \
        f"the RELEASE of the unacknowledged records failed ({results}): they were no longer acquired by this consumer"
    back = c.poll_until(len(rest), timeout=30, ack="ACCEPT")
    counts = {r.key: r.delivery_count for r in back}
    assert all(counts.get(r.key) == r.delivery_count + 1 for r in rest), \
        f"released, the unacknowledged records came back as {sorted(counts.items())}, not {[(r.key, r.delivery_count + 1) for r in rest]}"
    c.commit_sync()
    s.assert_conforms()
