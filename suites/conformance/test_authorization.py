"""KIP-932 authorization: with SASL/PLAIN and the standard authorizer, a share consumer needs READ on
the share group and READ on the topic; describing a share group needs DESCRIBE on it and on the
topics its members are assigned; a consumer whose password is wrong is refused at poll. A denied
request gets the documented authorization error, and no record or group leaks to the principal.

These tests start their own one-node cluster with a SASL/PLAIN listener and
`StandardAuthorizer` (the harness's own clients stay on the PLAINTEXT listeners as a super user),
so they need the local backend.
"""

from __future__ import annotations

import pytest

from harness.cluster.admin import grant, revoke

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.kip("authorization")]



@pytest.fixture
def own_session(own_session, own_cluster):
    """The suite's own sessions, on a cluster with a SASL listener (else skipped with the backend's reason)."""
    from harness.cluster.base import SaslListeners
    if not (isinstance(own_cluster, SaslListeners) and own_cluster.sasl_bootstrap_servers):
        from ksh_fixtures.plugin import unsupported_on
        pytest.skip("needs a SASL/PLAIN listener with the standard authorizer; the cluster in use has none"
                    + (f" ({unsupported_on(own_cluster, 'sasl')})" if unsupported_on(own_cluster, "sasl") else ""))
    return own_session


def _admin(s):
    return s.cluster.inspector.admin


def _denied(consumer, code: str) -> None:
    """The consumer is refused with `code` and given no record."""
    consumer.poll_until_error((code,))
    assert consumer.records_given() == [], f"{consumer.name} was given records although refused with {code}"


@pytest.mark.rule("poll-authorization")
@pytest.mark.parametrize("missing, code", [("group", "GROUP_AUTHORIZATION_FAILED"),
                                           ("topic", "TOPIC_AUTHORIZATION_FAILED")])
def test_a_share_consumer_needs_read_on_the_group_and_the_topic(own_session, sasl_user, missing, code):
    """Without READ on the share group (GROUP_AUTHORIZATION_FAILED) or on the topic
    (TOPIC_AUTHORIZATION_FAILED) a consumer is refused and given no record; once READ on both is
    granted it consumes every record."""
    s = own_session()
    alice = sasl_user("alice")  # a user of the `own_cluster` fixture (conftest; its password random per run)
    s.produce(5)
    granted = "topic" if missing == "group" else "group"
    grant(_admin(s), "User:alice", granted, s.topic if granted == "topic" else s.group, "READ")
    denied = s.consumer(user=alice)
    _denied(denied, code)
    denied.close()
    grant(_admin(s), "User:alice", missing, s.topic if missing == "topic" else s.group, "READ")
    c = s.consumer(user=alice)
    got = c.poll_until(5, timeout=60, ack="ACCEPT")
    c.commit_sync()
    assert sorted(r.offset for r in got) == list(range(5)), got
    s.assert_conforms()


@pytest.mark.rule("poll-authentication")
def test_a_share_consumer_whose_password_is_wrong_is_refused_with_an_authentication_error(own_session, sasl_user):
    """A consumer that connects with a wrong password is refused with an authentication error
    (SaslAuthenticationException, librdkafka's _AUTHENTICATION) and given no record, although its user
    holds READ on the group and the topic; with its own password the same user then consumes every record:
    only the authentication was at fault."""
    s = own_session()
    name, password = sasl_user("alice")
    s.produce(3)
    grant(_admin(s), "User:alice", "topic", s.topic, "READ")
    grant(_admin(s), "User:alice", "group", s.group, "READ")
    wrong = s.consumer(user=(name, password + "-wrong"))
    _denied(wrong, "AUTHENTICATION")
    wrong.close()
    c = s.consumer(user=(name, password))  # the same user, its own password: it consumes every record
    got = c.poll_until(3, timeout=60, ack="ACCEPT")
    c.commit_sync()
    assert sorted(r.offset for r in got) == list(range(3)), got
    s.assert_conforms()


@pytest.mark.rule("callback-authorization")
def test_an_acknowledgement_after_read_was_revoked_is_refused_in_the_callback(own_session, sasl_user):
    """Row CB9 of docs/client-contract.md (AcknowledgementCommitCallback: "AuthorizationException if not authorized to
    the topic or group"), gap G43: a consumer with READ on the group and the topic is given a record and ACCEPTs it;
    READ on the topic is revoked (the ACL no longer listed); commitAsync sends the ACCEPT: its callback reports an
    authorization error for the record, never success (the broker refuses a ShareAcknowledge without READ on the
    topic: TOPIC_AUTHORIZATION_FAILED). Another consumer is then given the record once its 15 s lock ran out, and
    accepts it."""
    from harness.conformance import precondition
    from harness.conformance.consumer import LATE_AFTER_LOCK_S
    from harness.sys.wait import WaitTimeout, wait_until
    s = own_session(lock_duration_ms=15000)
    s.require("commit_async", "callback")
    alice = sasl_user("alice")
    s.produce(1)
    grant(_admin(s), "User:alice", "group", s.group, "READ")
    grant(_admin(s), "User:alice", "topic", s.topic, "READ")
    c = s.consumer(user=alice)
    got = c.poll_until(1, timeout=60)
    precondition(len(got) == 1, f"alice, with READ on the group and the topic, was given {got}")
    assert c.ack(got, "ACCEPT") is None, f"the client refused the ACCEPT: {c.last_error}"
    revoke(_admin(s), "User:alice", "topic", s.topic, "READ")
    c.commit_async()
    offset = got[0].offset

    def results() -> list:
        return [op.value["error"] for op in s.ops(c.name, "callback")
                if any(offset in part["offsets"] for part in op.value["partitions"])]

    def reported() -> bool:  # callbacks are served while the client polls (its polls are refused now)
        c.poll(0.5)
        return bool(results())
    try:
        wait_until(reported, timeout=45, interval=0.0, what="the callback of the ACCEPT sent without READ")
    except WaitTimeout as exc:
        raise AssertionError(f"{exc}: an acknowledgement commit callback is owed for every acknowledgement") from None
    error = results()[0]
    assert error is not None and "AUTHORIZATION" in str(error).upper(), (
        f"the ACCEPT sent by commitAsync after READ on the topic was revoked was reported to the callback as "
        f"{error!r}, not as an authorization error")
    other = s.consumer()  # the harness's own principal: the record comes back to it once alice's lock ran out
    again = other.poll_until(1, timeout=15 + LATE_AFTER_LOCK_S, ack="ACCEPT", settled=s.all_settled)
    precondition(bool(again) or s.all_settled(),
                 "the record whose ACCEPT was refused neither came back to another consumer nor was settled")
    if again:
        other.commit_ok()
    s.assert_settled_by_the_broker("the record was accepted by another consumer once the refused ACCEPT's lock ran out")
    s.assert_conforms()


def test_describing_and_listing_a_share_group_need_describe_on_it(own_session, sasl_user):
    """Describe of a share group without DESCRIBE on it fails with a group authorization error, and
    listing groups does not show it; with DESCRIBE on the group but not on its members' topics the
    describe fails with a topic authorization error; with both, describe and list show the group."""
    s = own_session()
    bob = sasl_user("bob")
    s.produce(3)
    c = s.consumer()  # the harness's own principal: a member to describe
    c.poll_until(3, timeout=60, ack="ACCEPT")
    c.commit_sync()
    refused = s.admin("describe", s.group, user=bob)
    assert refused.get("error") == "GroupAuthorizationException", refused
    listed = s.admin("list", user=bob)
    assert s.group not in {g["group"] for g in listed.get("groups", [])}, listed
    grant(_admin(s), "User:bob", "group", s.group, "DESCRIBE")
    partial = s.admin("describe", s.group, user=bob)  # its members' topics are not bob's to see yet
    assert partial.get("error") == "TopicAuthorizationException", partial
    grant(_admin(s), "User:bob", "topic", s.topic, "DESCRIBE")
    shown = s.admin("describe", s.group, user=bob)
    assert shown.get("group") == s.group and shown.get("members"), shown
    listed = s.admin("list", user=bob)
    assert s.group in {g["group"] for g in listed.get("groups", [])}, listed
    s.assert_conforms()
