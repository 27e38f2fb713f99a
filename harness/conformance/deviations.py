"""Deviations from KIP-932 that the harness found in an implementation other than Apache Kafka.

A deviation found is a result of the harness, kept as an expected failure of the implementation over the versions
it is known on (`Deviation.known`, a `harness.known_range.KnownRange`: since the first version the harness met it
on, confirmed on the newest it was seen on, fixed in the first without it when known). When the session runs that
implementation at a version the range knows it on ("known"), a listed test whose check fails with the
deviation's own evidence (`Deviation.explains`) is an expected failure (xfail); one that passes is an unexpected
pass, which fails the session in one line naming the row to update, so a fix shows up; and one that fails
otherwise (another check, another message, an error of its setup) stays a failure (`ksh_fixtures.plugin`). At a
version newer than confirmed and not fixed ("unconfirmed": a release newer than the table) the expectation is
kept, not strict: the failure with its evidence is an expected failure saying "known in X, not yet confirmed on
Y", and a pass is a pass, reported at the session's end as a row to update, never a failure of the main job. On a
version older than since, or fixed, the test runs plainly: a deviation is never assumed of a version before the
harness met it. A unit test (`tests/unit/certify/test_known_ranges.py`) holds every row to the tested set
(`harness.tested_set.tested_versions`): none of its versions may be "unconfirmed". Each entry names the sentence
it breaks, what the harness saw and, where one can be pointed to, the implementation's source line; the page of
each implementation (`docs/implementations/<name>.md`) shows the evidence and a reproduce command.

Apache Kafka's own known bugs are not here: they are facts of a release line, fixed in a later one
(`harness.model.profiles.KNOWN_BUGS`), and a test meets them only with their evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harness.clients.franz import franz_version
from harness.errors import HarnessError
from harness.history.store import read_history
from harness.kafka.implementations import KFAKE_VERSIONS, MOCK
from harness.known_range import EXPECTED, KnownRange


@dataclass(frozen=True)
class Deviation:
    name: str
    implementation: str
    known: KnownRange  # the implementation's versions it is known on (since, confirmed, fixed_in)
    #: node ids (path::name, path::name[params] for one parameter set, or a prefix ending in `*`)
    tests: tuple[str, ...]
    rule: str  # the sentence (KIP-932, a follow-up KIP, or the Kafka API contract) it breaks
    seen: str  # what the harness saw
    source: str = ""  # where in the implementation's sources it comes from
    #: the clients that meet it (empty: every client): a deviation in what goes over the wire may break one
    #: client's parser and pass another's
    clients: tuple[str, ...] = ()
    #: what the test's failure must say for it to be this deviation (a regular expression searched in the
    #: failure's text); any other failure of the test stays a failure
    evidence: str = ""
    #: what the failure must not say (another checker failing beside it: more than this deviation)
    not_with: str = ""
    #: what one of the `error` operations of the run's history must say (a regular expression), for a deviation
    #: the client reports as an error: the run is the one the failure names (its run directory)
    history_errors: str = ""
    #: the deviation makes the set-up of some listed tests impossible (a second consumer on a partition): one of
    #: those ending inconclusive with the evidence is skipped as not exercisable, not counted an expected failure
    precludes: bool = False
    #: the deviation shows only when another client's timing meets it (a disconnect during a test): a listed
    #: test that passes is no news (a test of its own shows it every time, strict, and says when it is fixed)
    intermittent: bool = False

    def explains(self, failure: str) -> bool:
        """Whether a test's failure (the message of its assertion or `pytest.fail`) is this deviation: it says
        the evidence and not `not_with`, and where the deviation is a client's error (`history_errors`), the
        run's history holds that error (issue 46 item 4: a verdict alone could be any failure of its kind)."""
        if not self.evidence or re.search(self.evidence, failure) is None or (
                self.not_with and re.search(self.not_with, failure)):
            return False
        return not self.history_errors or any(re.search(self.history_errors, m) for m in run_errors(failure))

    @property
    def page(self) -> str:
        """Where its evidence is shown: the implementation's page, or for a client's deviation the client
        contract's list (`CLIENT_DEVIATIONS`)."""
        return "docs/client-contract.md" if self in CLIENT_DEVIATIONS else f"docs/implementations/{self.implementation}.md"

    @property
    def reason(self) -> str:
        where = f" ({self.source})" if self.source else ""
        return f"{self.implementation} deviation {self.name}: {self.seen}; breaks: {self.rule}{where}"

    def reason_on(self, version: str) -> str:
        """The expected failure's reason on `version`: `reason`, saying where it is known ("known in 2.16.1, not
        yet confirmed on 2.16.2")."""
        where = f" ({self.source})" if self.source else ""
        return (f"{self.implementation} deviation {self.name} ({self.known.on(version)}): {self.seen}; "
                f"breaks: {self.rule}{where}")

    def expected_on(self, version: str | None) -> bool:
        """Whether it is expected of the implementation at `version`: known there, or newer than confirmed and not
        fixed. A version not known (None) or not spelled as a version is never expected of: the test runs
        plainly, and fails if it deviates."""
        try:
            return version is not None and self.known.status(version) in EXPECTED
        except HarnessError:
            return False


#: met on the pinned version (the other listed one, older, was not run through the suite)
_KFAKE = KnownRange(since=KFAKE_VERSIONS[0], confirmed=KFAKE_VERSIONS[0])
_C = "suites/conformance/"
_SRC = "github.com/twmb/franz-go/pkg/kfake@" + KFAKE_VERSIONS[0]
#: librdkafka's mock: met on the librdkafka confluent-kafka 2.16.1's and 2.16.2's wheels bundle (2.16.0); its sources
#: read at the commit of the librdkafka repository named (the bundled release's mock code answers the same:
#: `docs/implementations/librdkafka-mock.md` shows the runs)
_MOCK = KnownRange(since="2.16.0", confirmed="2.16.0")
_RD = "github.com/confluentinc/librdkafka@4c3b017c"
#: a session summary's ack-results line ("  ack-results: FAIL  <message>; <message>") whose every anomaly is an
#: acknowledgement that got no result (`harness.checkers.ack_results`' ack-result-missing messages)
_ACK_RESULTS_MISSING_ONLY = (r"(?m)^  ack-results: FAIL  (?:[^;\n]*?(?:never got a result|got no result from the "
                             r"commit that carried it|got no result before it acknowledged the record again)"
                             r"(?:; |$))+$")

DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "group-configs-ignored", "kfake", _KFAKE,
        (f"{_C}test_locks.py::test_expired_lock_makes_the_record_available_to_another_consumer",
         f"{_C}test_delivery_count.py::test_group_delivery_count_limit_override"),
        "KIP-932, group configuration: share.record.lock.duration.ms is the group's record acquisition lock "
        "duration (null: the cluster's group.share.record.lock.duration.ms); Kafka 4.3's group config "
        "share.delivery.count.limit likewise overrides group.share.delivery.count.limit for the group",
        "the group configs are accepted (IncrementalAlterConfigs succeeds) but the broker-wide values decide: a "
        "record held past a 3 s group lock came back only after kfake's broker lock of 30 s (at +30.0 s; the "
        "tests allow 12 s past the lock), and a record was delivered 3 times under a group limit of 2",
        f"{_SRC}/data.go:1165 (shareRecordLockDurationMs reads the broker config only), 78_share_fetch.go:96 "
        "(maxDelivery := c.shareMaxDeliveryAttempts())",
        # (a record that never came back is not this deviation: lost, not late)
        evidence=r"did not reach another consumer within \d+ s: it came back after|redelivered only after|"
                 r"delivered with counts \[1, 2, 3",
        not_with=r"never came back"),
    Deviation(
        "group-config-bounds-absent", "kfake", _KFAKE,
        (f"{_C}test_locks.py::test_group_lock_duration_is_held_to_the_broker_bounds",
         f"{_C}test_locks.py::test_in_flight_limit_stops_acquisition_until_locks_drop",
         f"{_C}test_delivery_count.py::test_group_delivery_count_limit_is_held_to_the_broker_bounds",
         f"{_C}test_newer_features.py::test_assignment_interval_group_config_is_held_to_the_broker_bounds"),
        "KIP-932, group configuration: share.record.lock.duration.ms has a minimum of 1000 and a maximum limited "
        "by a cluster configuration (Kafka: group.share.min/max.record.lock.duration.ms, and likewise "
        "group.share.min/max.delivery.count.limit, .partition.max.record.locks, .assignment.interval.ms); a "
        "value outside them is refused with INVALID_CONFIG",
        "DescribeConfigs of a broker shows none of the group.share.min.* / group.share.max.* bounds, so no "
        "bound can be enforced",
        f"{_SRC}/data.go:842-849 (the share broker configs kfake knows: no min/max bound among them)",
        evidence=r"the brokers show no bounds group\.share\.min\."),
    Deviation(
        "by-duration-read-as-latest", "kfake", _KFAKE,
        (f"{_C}test_start_offsets.py::test_by_duration_starts_at_the_first_record_within_the_duration",),
        "share.auto.offset.reset=by_duration:<ISO-8601 duration> (KIP-1106, Kafka 4.1+): a new share-partition "
        "starts at the first record whose timestamp lies within the duration",
        "the value is accepted, and the share-partition starts at the end of the log as with latest: with "
        "by_duration:PT10M, none of the 4 records produced within the last 10 minutes was delivered",
        f"{_SRC}/share_groups.go:993-996 (any value but \"earliest\" starts at the high watermark)",
        evidence=r"by_duration:PT10M delivered offsets \[\]"),
    Deviation(
        "delete-records-stalls-share-partition", "kfake", _KFAKE,
        (f"{_C}test_retention.py::test_deleting_in_flight_records_archives_them_and_acknowledging_them_is_no_error",),
        "KIP-932: the SPSO of each share-partition is bounded by the log start offset of the topic-partition, "
        "which is managed by the retention policy (records below it are gone, those above it still delivered)",
        "after DeleteRecords moved the log start from 0 to 6 while records 0-9 were acquired, and those were "
        "released, records 6-9 were never delivered again (30 s)",
        f"{_SRC}/share_groups.go:995 (the only read of the log start offset: when a share-partition is created)",
        evidence=r"after records 0-5 were deleted and all released, offsets \[\] came"),
    Deviation(
        "added-partitions-start-at-latest", "kfake", _KFAKE,
        (f"{_C}test_partitions_added.py::test_new_partitions_are_consumed_from_offset_zero[latest]",),
        "KIP-932: share-partitions of partitions added to a subscribed topic start at offset 0, whatever "
        "share.auto.offset.reset says (it applies to the share group's first consumption only)",
        "with share.auto.offset.reset=latest, the records produced to the added partitions before their first "
        "share fetch were never delivered (the same deviation as Apache Kafka 4.1-4.3's known bug)",
        f"{_SRC}/share_groups.go:993 (a share-partition created later starts at the high watermark too)",
        evidence=r"not the documented latest deviation: delivered \[\], expected \[\(1, 0\), \(1, 1\), \(1, 2\), \(2, 0\), \(2, 1\), \(2, 2\)\]"),
    Deviation(
        "share-fetch-null-records", "kfake", _KFAKE,
        ("suites/chaos/test_chaos_moves.py::test_leader_moves_with_every_broker_up[leader-move-*",),
        "the ShareFetch response schema (Kafka 4.3.1 ShareFetchResponse.json, the wire contract of KIP-932's "
        "RPCs): Records is nullable in version 0 only (\"nullableVersions\": \"0\")",
        "in ShareFetch v1+ responses a partition without data (NOT_LEADER_OR_FOLLOWER after a leader move, an "
        "acknowledgement-only entry) carries a null Records field: librdkafka 2.16.0 rejects the whole answer "
        "(\"ShareFetch reply error: Local: Bad message format\") and never consumes the moved partition again; "
        "the Java client fails with \"non-nullable field records was serialized as null\" "
        "(ShareFetchResponseData$PartitionData.read); franz-go reads it. Met for certain after one partition's "
        "leader moved (the consumer keeps asking the old leader); a shuffle of every leader with the group "
        "coordinators rehashed was survived by librdkafka (it rejoined), so only the move is expected to fail",
        f"{_SRC}/78_share_fetch.go:124-135 (donep builds each partition with kmsg's default nil Records)",
        clients=("confluent", "java"), evidence=r"no-loss: FAIL",
        not_with=r"(delivery-count|batch-order|exclusive-acquisition|no-redelivery-after-ack|durable-state): FAIL|"
                 r"faults not applied|UNKNOWN",
        # the parse errors it describes, as the client reported them (librdkafka's _BAD_MSG, Java's exception)
        history_errors=r"Bad message format|non-nullable field records was serialized as null"),
    Deviation(
        "share-fetch-null-records-java", "kfake", _KFAKE,
        (f"{_C}test_client.py::test_every_acquired_record_is_handed_to_the_application",),
        "the ShareFetch response schema (as for share-fetch-null-records): Records is not nullable from v1",
        "the same null Records, met by the Java client (4.3.1) beyond leader moves: a response carrying an "
        "acknowledgement-only partition fails to parse (\"non-nullable field records was serialized as null\"), "
        "so the acknowledgements it answered never get a result (ack-results: an ACCEPT that never got a "
        "result); a shuffle of every leader lost records too, but not in every run, so it stays a failure",
        f"{_SRC}/78_share_fetch.go:124-135",
        # ack-results failing with results that never came, and nothing else: every anomaly it lists is one
        clients=("java",), evidence=_ACK_RESULTS_MISSING_ONLY,
        not_with=r"(no-loss|delivery-count|batch-order|exclusive-acquisition|no-redelivery-after-ack|durable-state): "
                 r"FAIL|UNKNOWN"),
    Deviation(
        "partition-assigned-to-one-member", MOCK, _MOCK,
        (f"{_C}test_group_lifecycle.py::test_more_consumers_than_partitions_all_make_progress",
         "suites/test_share_basic.py::test_more_consumers_than_partitions",
         f"{_C}test_locks.py::test_a_poll_hands_out_no_record_whose_lock_expired",
         f"{_C}test_locks.py::test_expired_lock_makes_the_record_available_to_another_consumer",
         f"{_C}test_acknowledgement.py::test_acknowledging_after_the_lock_expired_fails",
         f"{_C}test_acknowledgement.py::test_a_close_whose_commit_fails_still_leaves_the_group",
         f"{_C}test_acknowledgement.py::test_a_poll_that_commits_a_refused_acknowledgement_raises_nothing",
         f"{_C}test_acknowledgement.py::test_commit_async_reports_a_refused_acknowledgement_through_the_callback",
         f"{_C}test_client_contract.py::test_an_acknowledgement_is_local_until_the_next_poll_or_commit"),
        "KIP-932, share groups: \"The consumers in a share group cooperatively consume records with partitions that "
        "may be assigned to multiple consumers\" and \"The number of consumers in a share group can exceed the "
        "number of partitions\"",
        "the mock assigns each partition to exactly one member, as a consumer group does: with 3 consumers on one "
        "partition one consumer took all 60 records and the other two none; a record whose lock expired, or that "
        "its holder released or left, never reached another consumer (14-17 s of polls were given nothing), so "
        "every behaviour that needs a second consumer on a partition cannot be exercised",
        f"{_RD}/src/rdkafka_mock_sharegrp.c:459-511 (rd_kafka_mock_sharegroup_assign_topic_partitions: the "
        "partitions split into ranges, ceil(partitions/members) each, one member per partition)",
        clients=("confluent",), precludes=True,
        evidence=r"a consumer made no progress: \{'consumer-0': \d+, 'consumer-1': 0|only \[[^]]*\] received records "
                 r"from (\d+) partitions\s+assert \1 > \1|did not reach another consumer "
                 r"within \d+ s|another consumer was given \[\] after the holder's lock ended|the second consumer did "
                 r"not acquire the \d+ records in one poll within \d+ s: \[\]"),
    Deviation(
        "connection-close-ends-every-share-session", MOCK, _MOCK,
        (f"{_C}test_transactions.py::test_isolation_level_decides_whether_aborted_records_are_delivered[read_committed]",),
        "KIP-932, ShareFetch API: \"The first request from a share consumer to a share-partition leader broker "
        "establishes a share session ... When the share consumer wishes to close the share session, it sets MemberId "
        "to the member ID and ShareSessionEpoch to -1\": a share session is the member's",
        "any connection that closes on a broker ends every share session on that broker, of every member, and "
        "releases their records: a consumer's commit of 8 ACCEPTs got SHARE_SESSION_NOT_FOUND right after the "
        "test's transactional producers disconnected, and the 5 records came back with delivery count 2 (shown "
        "without timing in tests/real/test_mock_real.py: one ApiVersions from another client ends the session)",
        f"{_RD}/src/rdkafka_mock_sharegrp.c:1134-1154 (rd_kafka_mock_sharegrps_node_connection_closed: every "
        "session whose node_id is the broker's, whoever's connection closed), called from "
        "rd_kafka_mock_connection_close (src/rdkafka_mock.c:1261)",
        clients=("confluent",), intermittent=True,
        evidence=r"first extra item: Record\(id='[^']+', topic='[^']+', partition=\d+, offset=\d+, delivery_count=2\)"),
)

#: A client library's deviations from the client contract (docs/client-contract.md), met on Apache Kafka:
#: `implementation` is the client and `known` the client's versions it is known on. The conformance suite
#: gates a broker with a client as its instrument, so a rule that client is known to break is a strict
#: expected failure there, as an implementation's deviation is; a certification (a session given `ksh_rules`)
#: judges the client itself, so there it is not expected: the rule FAILs (`client_deviations_for`).
CLIENT_DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "invalid-topic-unreported", "confluent", KnownRange(since="2.16.1", confirmed="2.16.2"),
        (f"{_C}test_client_contract.py::test_a_consumer_subscribed_to_an_invalid_topic_name_is_told_at_poll",),
        "KafkaShareConsumer Javadoc, poll(Duration): \"@throws InvalidTopicException if the current subscription "
        "contains any invalid topic\" (rule poll-invalid-topic)",
        "a ShareConsumer subscribed to \"not a valid topic!\" polls for 10 s (30 s before issue 53) and is told nothing: no error from "
        "poll, none in a message, none to the error callback, no line in librdkafka's log (librdkafka 2.16.0); the "
        "Java client throws InvalidTopicException from poll and franz-go returns INVALID_TOPIC_EXCEPTION",
        evidence=r"to be refused with INVALID_TOPIC_EXCEPTION"),
    Deviation(
        "authentication-unreported", "franz", KnownRange(since="v1.22.2", confirmed="v1.22.2"),
        (f"{_C}test_authorization.py::"
         "test_a_share_consumer_whose_password_is_wrong_is_refused_with_an_authentication_error",),
        "KafkaShareConsumer Javadoc, poll(Duration): \"@throws AuthenticationException if authentication "
        "fails.\" (rule poll-authentication)",
        "a consumer with a wrong SASL/PLAIN password polls for 30 s and PollRecords returns no error: franz-go "
        "only logs \"unable to initialize sasl; ... SASL_AUTHENTICATION_FAILED\" (franz-go v1.22.2); the Java "
        "client throws SaslAuthenticationException from poll and librdkafka calls the error callback with "
        "_AUTHENTICATION",
        evidence=r"to be refused with AUTHENTICATION"),
    Deviation(
        "not-subscribed-unreported", "franz", KnownRange(since="v1.22.2", confirmed="v1.22.2"),
        (f"{_C}test_client_contract.py::test_a_poll_without_a_subscription_is_an_error",),
        "KafkaShareConsumer Javadoc, poll(Duration): \"It is an error to not have subscribed to any topics before "
        "polling for data.\" and \"@throws IllegalStateException if the consumer is not subscribed to any "
        "topics\" (rule poll-not-subscribed)",
        "a share consumer given no topic (kgo.ConsumeTopics() with none) polls for 10 s (30 s before issue 53) and PollRecords returns "
        "neither a record nor an error (franz-go v1.22.2); KafkaShareConsumer and confluent-kafka's ShareConsumer "
        "throw IllegalStateException (\"Consumer is not subscribed to any topics\") from poll",
        evidence=r"to be refused with ILLEGAL_STATE"),
    Deviation(
        "disconnect-reported-as-server-error", "java", KnownRange(since="4.1.2", confirmed="4.4.0"),
        (f"{_C}test_client_contract.py::test_an_acknowledgement_cut_off_by_a_dropped_connection_is_reported_as_one",),
        "AcknowledgementCommitCallback Javadoc, onComplete: \"DisconnectException if the broker disconnected before "
        "the request could be completed\" (rule callback-disconnect)",
        "an ACCEPT sent by commitAsync into a connection to the partition's leader that then dropped (cut by the "
        "proxy, which closes it on the heal) is reported to the callback as UnknownServerException (\"The server "
        "experienced an unexpected error when processing the request.\"), on kafka-clients 4.1.2, 4.2.0, 4.3.1 and "
        "4.4.0: ShareConsumeRequestManager.handleShareAcknowledgeFailure maps the DisconnectException through "
        "Errors.forException, which knows no DisconnectException and answers UNKNOWN_SERVER_ERROR; confluent-kafka "
        "reports _TRANSPORT",
        "kafka-clients ShareConsumeRequestManager.handleShareAcknowledgeFailure (Errors.forException(error)); "
        "Errors.forException: a class not in CLASS_TO_ERROR, nor any superclass, is UNKNOWN_SERVER_ERROR",
        evidence=r"was reported to the callback as 'UnknownServerException"),
)


def client_version(client: str, kafka_version: str | None) -> str | None:
    """The version of a built-in client's library as `CLIENT_DEVIATIONS` names it (None: not known here, e.g. a
    driver manifest's client: no client deviation is assumed of it)."""
    if client == "confluent":
        from importlib.metadata import PackageNotFoundError, version
        try:
            return version("confluent-kafka")
        except PackageNotFoundError:
            return None
    if client == "franz":
        return franz_version()
    return kafka_version if client == "java" else None


def client_deviations_for(client: str, version: str | None, certifying: bool) -> list[Deviation]:
    """The deviations the suite expects of `client` at `version` (known there, or not yet confirmed:
    `Deviation.expected_on`); none in a certification (`certifying`), none of a version not known (None)."""
    return [] if certifying else \
        [d for d in CLIENT_DEVIATIONS if d.implementation == client and d.expected_on(version)]


#: how much of each consumer's log `run_errors` reads (its end: the errors come after the fault)
LOG_TAIL_BYTES = 8 << 20


def run_errors(failure: str) -> list[str]:
    """What the clients of the run a failure names reported as errors: the messages of the `error`
    operations in its history, and the lines of its consumers' logs that report an error (librdkafka logs a
    ShareFetch answer it cannot parse, "ShareFetch reply error: Local: Bad message format", without raising
    it to the application). The run is a chaos run's summary ("run directory: <dir>") or a conformance
    session's ("<VERDICT> <dir>" on its first line); none if it names no run or its history cannot be read
    (then no error is shown: fail closed)."""
    named = re.search(r"^run directory: (.+)$", failure, re.M) or re.match(r"(?:PASS|FAIL|UNKNOWN) (/.+)$",
                                                                             failure, re.M)
    if named is None:
        return []
    run = Path(named.group(1).strip())
    try:
        ops = read_history(run / "history.jsonl")
    except (OSError, HarnessError):
        return []
    found = [str(op.value.get("message", "")) for op in ops if op.f == "error" and isinstance(op.value, dict)]
    for log in sorted((run / "logs").glob("consumer-*.log")):
        try:
            if not log.is_file():
                continue
            with log.open("rb") as handle:
                handle.seek(max(0, log.stat().st_size - LOG_TAIL_BYTES))
                text = handle.read(LOG_TAIL_BYTES).decode(errors="replace")
        except OSError:
            continue
        found += [line for line in text.splitlines() if "error" in line.lower()]
    return found


def deviations_for(implementation: str, version: str | None, client: str | None = None) -> list[Deviation]:
    """The deviations expected of `implementation` at `version` with `client`: known there, or not yet confirmed
    (`Deviation.expected_on`); none for Apache Kafka (`implementation` "apache"), none of a version not known."""
    return [d for d in DEVIATIONS if d.implementation == implementation and d.expected_on(version)
            and (not d.clients or client is None or client in d.clients)]


def deviation_of(nodeid: str, deviations: list[Deviation]) -> Deviation | None:
    """The deviation a test meets, if any: `nodeid` as the repository names it (with or without parameters; the
    plugin names an installed suite's test so, `harness.sys.suites.suite_test_id`)."""
    base = nodeid.split("[", 1)[0]
    for deviation in deviations:
        for test in deviation.tests:
            if test in (nodeid, base) or (test.endswith("*") and nodeid.startswith(test[:-1])):
                return deviation
    return None
