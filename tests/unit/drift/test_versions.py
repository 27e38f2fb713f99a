"""The "what moved" table: only final releases are the newest, a line the harness does not support shows up, an
unreachable registry is a row not resolved (never "same")."""

from harness.drift.versions import Moved, final_key, kafka, latest, lock_pins, newest, python, single

MAVEN_KAFKA = ["3.9.1", "4.0.0", "4.1.0-rc1", "4.1.2", "4.2.2", "4.3.0", "4.3.1", "4.3.2", "4.4.0"]
KNOWN = ("4.0.2", "4.1.2", "4.2.2", "4.3.0", "4.3.1", "4.4.0")
LINES = ("4.1", "4.2", "4.3", "4.4")


def test_only_final_releases_count_and_numbers_are_compared_as_numbers():
    assert final_key("4.3.2") == (4, 3, 2) and final_key("v1.22.3") == (1, 22, 3)
    for other in ("4.2.0-M1", "4.1.0-RC1", "v1.23.0-rc.1", "4.3.²", "", "latest"):
        assert final_key(other) is None, other
    assert newest(["4.9.0", "4.10.0", "4.11.0-M1"]) == "4.10.0"
    assert newest(["v1.22.2", "v1.22.10", "v1.3.0"]) == "v1.22.10"
    assert newest(MAVEN_KAFKA, "4.3") == "4.3.2" and newest(MAVEN_KAFKA, "4.5") is None
    assert newest([]) is None and newest(["4.2.0-M1"]) is None


def test_kafka_rows_one_per_supported_line_and_a_newer_line_as_new():
    rows = {m.component: m for m in kafka(KNOWN, LINES, MAVEN_KAFKA + ["4.5.0", "4.5.1", "5.0.0-rc1"])}
    assert (rows["Kafka 4.3"].tested, rows["Kafka 4.3"].newest, rows["Kafka 4.3"].state) == ("4.3.1", "4.3.2", "moved")
    assert rows["Kafka 4.4"].state == "same" and rows["Kafka 4.2"].state == "same"
    new = [m for m in rows.values() if m.state == "new"]
    assert [(m.component.split()[1], m.newest) for m in new] == [("4.5", "4.5.1")]  # an rc opens no line


def test_an_unreachable_registry_leaves_every_row_unresolved_naming_it():
    rows = kafka(KNOWN, LINES, "Maven Central could not be read (timeout)")
    assert [m.state for m in rows] == ["unresolved"] * 4
    assert all("Maven Central" in m.why for m in rows)
    missing_line = kafka(KNOWN, LINES, ["4.4.0"])  # a line the registry lists nothing of: not "same"
    assert {m.component: m.state for m in missing_line}["Kafka 4.3"] == "unresolved"


def test_single_and_latest_rows():
    assert single("franz-go", "v1.22.2", ["v1.22.2", "v1.22.3", "v1.23.0-rc.1"]) == Moved("franz-go", "v1.22.2", "v1.22.3")
    assert single("spring-kafka", "4.1.2", ["4.1.2", "4.2.0-M1"]).state == "same"
    assert single("x", "1.0.0", "proxy down").state == "unresolved"
    assert single("x", "1.0.0", ["1.0.0-M1"]).state == "unresolved"
    # a registry whose newest is older than the pin lists only part of the releases: unknown, not "moved back"
    stale = single("toxiproxy", "v2.12.0", ["v2.3.0", "v2.5.0"])
    assert stale.state == "unresolved" and "incomplete" in stale.why
    pseudo = "v0.0.0-20260918054303-01f206a7e32c"
    assert latest("kfake", pseudo, [pseudo]).state == "same"
    assert latest("kfake", pseudo, ["v0.0.0-20261001000000-aaaaaaaaaaaa"]).state == "moved"
    assert latest("kfake", pseudo, "no proxy").state == "unresolved" and latest("kfake", pseudo, []).newest is None


LOCK = """\
confluent-kafka==2.16.2 \\
    --hash=sha256:aa
hypothesis==6.168.5 ; python_full_version < '3.11' \\
    --hash=sha256:bb
hypothesis==6.170.29 ; python_full_version >= '3.11' \\
    --hash=sha256:cc
    # via kafka-share-harness
PyYAML==6.0.3 \\
    --hash=sha256:dd
"""


def test_lock_pins_keep_markers_and_canonical_names():
    pins = lock_pins(LOCK)
    assert pins["pyyaml"] == ("6.0.3",) and pins["confluent-kafka"] == ("2.16.2",)
    assert pins["hypothesis"] == ("6.168.5 (python_full_version < '3.11')", "6.170.29 (python_full_version >= '3.11')")


def test_python_rows_show_what_moved_appeared_or_left_and_count_the_rest():
    newer = LOCK.replace("2.16.2", "2.17.0").replace("PyYAML==6.0.3 \\\n    --hash=sha256:dd\n", "") + \
        "rich==14.0.0 \\\n    --hash=sha256:ee\n"
    rows = {m.component: m for m in python(LOCK, newer)}
    assert (rows["Python confluent-kafka"].tested, rows["Python confluent-kafka"].newest) == ("2.16.2", "2.17.0")
    assert rows["Python pyyaml"].newest == "(no longer required)" and rows["Python rich"].state == "new"
    assert rows["Python: the other 1 locked packages"].state == "same"  # hypothesis
    assert [m.state for m in python(LOCK, None, "PyPI could not be resolved")] == ["unresolved"]
    assert [m.state for m in python(LOCK, "garbage\n")] == ["unresolved"]
    assert [m.component for m in python(LOCK, LOCK)] == ["Python: all 3 locked packages"]
