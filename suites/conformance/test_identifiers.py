"""KIP-932 share groups take any legal group id and any legal topic name: names drawn by hypothesis
from the whole legal alphabet and length range are consumed like any other, through the client
under test (`--ksh-client`: every client in the version matrix).

Topic names: Kafka's alphabet `[a-zA-Z0-9._-]`, 1 to 249 characters (`Topic.validate`); a drawn name
gets `_` and 6 hex digits so each example's topic is fresh (names differing only in `.` and `_`
collide in Kafka; the suffix keeps them apart). Group ids: any non-empty string (the protocol's
string; no alphabet), here printable Unicode without whitespace (the harness's tools pass a group id
as one argument), with a fresh suffix too. Seeded by `--ksh-seed`."""

import string
import uuid

import pytest
from hypothesis import HealthCheck, Phase, example, given, seed, settings
from hypothesis import strategies as st

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.kip("lifecycle")]

TOPIC_ALPHABET = string.ascii_letters + string.digits + "._-"
#: a topic name is at most 249 characters: the drawn part leaves room for the `_` + 6 hex suffix
TOPIC_NAMES = st.text(TOPIC_ALPHABET, min_size=1, max_size=249 - 7)
GROUP_IDS = st.text(st.characters(min_codepoint=0x21, exclude_categories=("Cs", "Cc", "Cf", "Zs", "Zl", "Zp", "Co",
                                                                        "Cn")),
                    min_size=1, max_size=100)


def test_any_legal_topic_name_and_group_id_is_consumed(share_session, ksh_spec):
    """A share group with any legal group id, on a topic with any legal name, delivers every record
    produced, each once, and accepts them (the history conforms to the model)."""
    nightly = ksh_spec.profile == "nightly"

    @seed(ksh_spec.seed)
    @settings(max_examples=8 if nightly else 2, deadline=None, database=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(topic=TOPIC_NAMES, group=GROUP_IDS)
    @example(topic=(TOPIC_ALPHABET * 4)[:249 - 7], group="\u00fc\U0001f600" * 50)  # the longest name, every character
    def one(topic: str, group: str) -> None:
        suffix = uuid.uuid4().hex[:6]
        names = (f"{topic}_{suffix}", f"{group}-{suffix}")
        s = share_session(names=names, topic_partitions=1)
        ids = s.produce(3)
        c = s.consumer()
        got = c.poll_until(3, timeout=30, ack="ACCEPT")
        c.commit_ok()
        assert sorted(r.id for r in got) == sorted(ids), \
            f"topic {names[0]!r}, group {names[1]!r}: {len(got)} of 3 records delivered"
        s.assert_conforms()
    one()
