"""Deviations and known bugs by version range (issue 73, item 2): the order of the versions the tables spell
(`harness.known_range.version_key`), where a version falls in a row's range (`KnownRange.status`, at every
boundary), and the tables held to the tested set: none of its versions may find a row "not yet confirmed"."""

from __future__ import annotations

import pytest

from harness.conformance.deviations import CLIENT_DEVIATIONS, DEVIATIONS, Deviation
from harness.errors import HarnessError
from harness.kafka.implementations import KFAKE_VERSIONS
from harness.known_range import BEFORE, FIXED, KNOWN, UNCONFIRMED, KnownRange, version_key
from harness.model.profiles import KNOWN_BUGS, MODEL_PROFILES, model_profile
from harness import tested_set

#: each list in ascending order, every neighbour strictly below the next
ORDERED = [
    ["4.0.0", "4.1.0", "4.1.2", "4.1.10", "4.2.0", "4.3.1", "4.3.2", "4.3.x", "4.4.0", "10.0.0"],
    ["2.16.1", "2.16.2", "2.17.0.dev1", "2.17.0a1", "2.17.0a2", "2.17.0b1", "2.17.0rc1", "2.17.0", "2.17.0.post1",
     "2.17.1"],
    # Go: a pre-release before its release; numeric identifiers numerically and below alphanumeric ones; more
    # identifiers above fewer; pseudo-versions by their timestamp (KFAKE_VERSIONS[1] is May 2026, [0] September)
    ["v0.0.0-20260515175617-8268a5d078c0", "v0.0.0-20260918054303-01f206a7e32c", "v0.0.0", "v1.22.2-2",
     "v1.22.2-10", "v1.22.2-alpha", "v1.22.2-alpha.1", "v1.22.2-beta", "v1.22.2", "v1.22.3-0.20260101000000-abcdef123456",
     "v1.22.3", "v1.23.0", "v2.0.0"],
]


@pytest.mark.parametrize("versions", ORDERED, ids=["kafka", "pep440", "go"])
def test_version_key_orders_the_spellings_the_tables_use(versions):
    keys = [version_key(v) for v in versions]
    assert all(a < b for a, b in zip(keys, keys[1:])), versions


def test_version_key_equalities_and_the_pinned_kfake_versions():
    assert version_key("4.3") == version_key("4.3.0") == version_key("4.3.0.0")
    assert version_key("v1.22.2+build.5") == version_key("v1.22.2")  # build metadata does not order
    assert version_key(KFAKE_VERSIONS[1]) < version_key(KFAKE_VERSIONS[0])
    assert version_key("4.3.x") > version_key("4.3.999") and version_key("4.x") > version_key("4.99.1")


@pytest.mark.parametrize("bad", ["", " 4.3.1", "4.3.1 ", "latest", "unknown", "4..3", "4.3.", "x", "4.x.1",
                                 "4.3.1-SNAPSHOT", "v1", "v1.2", "V1.2.3", "v1.2.3-", "v1.2.3-a..b", "4.3.1rc",
                                 None, 4.3])
def test_version_key_refuses_anything_else_in_one_line_naming_the_spellings(bad):
    with pytest.raises(HarnessError) as refused:
        version_key(bad)
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"invalid version {bad!r}: spell it as a release (4.3.1")
    assert "v0.0.0-20260918054303-01f206a7e32c" in message


def test_status_at_every_boundary_of_a_range_with_a_fix():
    known = KnownRange(since="4.1.0", confirmed="4.1.2", fixed_in="4.2.0")
    assert [known.status(v) for v in ("4.0.2", "4.1.0rc1", "4.1.0", "4.1.1", "4.1.2", "4.1.3", "4.2.0rc1", "4.2.0",
                                      "4.2.1", "5.0.0")] == \
        [BEFORE, BEFORE, KNOWN, KNOWN, KNOWN, UNCONFIRMED, UNCONFIRMED, FIXED, FIXED, FIXED]
    assert [known.expects(v) for v in ("4.0.2", "4.1.0", "4.1.3", "4.2.0")] == [False, True, True, False]


def test_status_without_a_fix_and_of_one_version_and_of_a_whole_line():
    one = KnownRange(since="2.16.1", confirmed="2.16.1")
    assert [one.status(v) for v in ("2.16.0", "2.16.1", "2.16.2", "3.0.0")] == [BEFORE, KNOWN, UNCONFIRMED, UNCONFIRMED]
    line = KnownRange(since="4.0.0", confirmed="4.3.x", fixed_in="4.4.0")
    assert [line.status(v) for v in ("4.3.1", "4.3.9", "4.4.0rc1", "4.4.0")] == [KNOWN, KNOWN, UNCONFIRMED, FIXED]
    go = KnownRange(since=KFAKE_VERSIONS[0], confirmed=KFAKE_VERSIONS[0])
    assert [go.status(v) for v in (KFAKE_VERSIONS[1], KFAKE_VERSIONS[0], "v0.0.0-20261001000000-aaaaaaaaaaaa",
                                   "v1.0.0")] == [BEFORE, KNOWN, UNCONFIRMED, UNCONFIRMED]


def test_the_wording_of_each_status():
    known = KnownRange(since="2.16.1", confirmed="2.16.1", fixed_in="2.17.0")
    assert known.on("2.16.2") == "known in 2.16.1, not yet confirmed on 2.16.2"  # the issue's words
    assert known.on("2.16.1") == "known in 2.16.1"
    assert known.on("2.16.0") == "not met before 2.16.1 (known in 2.16.1), so not expected on 2.16.0"
    assert known.on("2.17.0") == "fixed in 2.17.0 (known in 2.16.1)"
    assert str(known) == "known in 2.16.1, fixed in 2.17.0"
    assert str(KnownRange("4.1.2", "4.4.0")) == "known in 4.1.2 to 4.4.0, no fix known"


@pytest.mark.parametrize("since, confirmed, fixed_in, says", [
    ("2.16.2", "2.16.1", "", "since 2.16.2 is newer than confirmed 2.16.1"),
    ("2.16.1", "2.16.2", "2.16.2", "fixed_in 2.16.2 is not newer than confirmed 2.16.2"),
    ("2.16.1", "2.16.2", "2.16.0", "fixed_in 2.16.0 is not newer than confirmed 2.16.2"),
    ("4.3.x", "4.3.x", "", "since 4.3.x names a line's top"),
    ("4.1.0", "4.3.1", "4.4.x", "fixed_in 4.4.x names a line's top"),
    ("v1.22.2", "1.23.0", "", "spell since, confirmed and fixed_in alike"),
    ("2.16.1", "latest", "", "invalid version 'latest'"),
    ("", "2.16.1", "", "invalid version ''"),
])
def test_a_range_that_cannot_be_read_is_refused_at_construction(since, confirmed, fixed_in, says):
    with pytest.raises(HarnessError, match=says) as refused:
        KnownRange(since, confirmed, fixed_in)
    assert "\n" not in str(refused.value)


def test_a_version_spelled_otherwise_is_never_taken_for_a_place_of_the_range():
    with pytest.raises(HarnessError, match="not spelled as the known range's"):
        KnownRange("v1.22.2", "v1.22.2").status("1.22.2")
    with pytest.raises(HarnessError, match="invalid version 'unknown'"):
        KnownRange("v1.22.2", "v1.22.2").status("unknown")
    row = Deviation("d", "franz", KnownRange("v1.22.2", "v1.22.2"), ("t.py::test",), "rule", "seen")
    # not a version (franz_version's "unknown", a client the harness cannot name): nothing expected, the test
    # runs plainly and fails if it deviates
    assert [row.expected_on(v) for v in ("v1.22.2", "v1.23.0", "v1.22.1", None, "unknown", "1.22.2")] == \
        [True, True, False, False, False, False]


def _rows() -> list[tuple[str, str, KnownRange, str]]:
    """(table, name, range, implementation the tested set names it by) of every row of every table."""
    rows = [("DEVIATIONS", d.name, d.known, d.implementation) for d in DEVIATIONS]
    rows += [("CLIENT_DEVIATIONS", d.name, d.known, d.implementation) for d in CLIENT_DEVIATIONS]
    rows += [("KNOWN_BUGS", b.name, b.known, "apache") for b in KNOWN_BUGS.values()]
    return rows


def test_the_tables_decide_every_version_of_the_tested_set():
    """Every row of the deviation and known-bug tables says, of every version the tested set holds for its
    implementation or client, that it is known there, fixed before it or not yet met: never "not yet confirmed"
    (a version the tested set runs is one the harness has run the row's test on)."""
    tested = tested_set.tested_versions()
    undecided = []
    for table, name, known, of in _rows():
        assert of in tested, f"{table} row {name}: the tested set names no versions of {of!r}"
        for version in tested[of]:
            status = known.status(version)
            assert status in (BEFORE, KNOWN, UNCONFIRMED, FIXED)
            if status == UNCONFIRMED:
                where = "harness/model/profiles.py" if table == "KNOWN_BUGS" else "harness/conformance/deviations.py"
                undecided.append(f"{table} row {name} ({of}) in {where}: {known.on(version)}, which the tested set "
                                 f"holds: run its test on {version} and move confirmed to {version}, or set fixed_in "
                                 f"{version} if it no longer reproduces there")
    if undecided:
        pytest.fail("\n".join(undecided), pytrace=False)


def test_the_issues_case_confluent_kafka_2_16_2_is_known_not_a_failure():
    [row] = [d for d in CLIENT_DEVIATIONS if d.name == "invalid-topic-unreported"]
    assert row.known.status("2.16.1") == row.known.status("2.16.2") == KNOWN
    assert row.known.status("2.16.3") == UNCONFIRMED and row.expected_on("2.16.3")
    assert row.reason_on("2.16.3").startswith(
        "confluent deviation invalid-topic-unreported (known in 2.16.1 to 2.16.2, not yet confirmed on 2.16.3): ")


def test_a_known_bug_is_expected_where_known_and_on_a_newer_release_of_its_line_until_fixed():
    regressed = KNOWN_BUGS["state-start-offset-regressed"]
    assert [regressed.affects(v) for v in ("4.0.0", "4.3.1", "4.3.2", "4.4.0")] == [True, True, True, False]
    assert regressed.known.on("4.3.2") == "known in 4.0.0 to 4.3.1, not yet confirmed on 4.3.2"
    decrement = KNOWN_BUGS["session-release-decrement"]
    assert [decrement.affects(v) for v in ("4.0.2", "4.1.0", "4.1.2", "4.2.0")] == [False, True, True, False]
    assert decrement.fixed == "4.2.0 (KAFKA-19972)" and KNOWN_BUGS["added-partitions-start-at-latest"].fixed == "4.4.0"


def test_the_model_profiles_name_the_known_bugs_of_every_tested_release():
    """The profiles (one per line) and KNOWN_BUGS (by release) agree on every Kafka release of the tested set."""
    judged = [b for b in KNOWN_BUGS.values() if b.judged_by == "allowance"]
    for version in tested_set.tested_versions()["apache"]:
        assert model_profile(version).known_bugs == {b.name for b in judged if b.affects(version)}, version
    assert set(MODEL_PROFILES) >= {".".join(v.split(".")[:2]) for v in tested_set.tested_versions()["apache"]}
