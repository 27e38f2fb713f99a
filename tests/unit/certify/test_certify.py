"""Certification and the driver contract without a cluster: manifests, the contract version a driver
speaks, rule results, certificates and the comparison page, and the replay's `ack-undelivered`."""

import json
import sys
import time
from pathlib import Path

import pytest

from harness.certify.certificate import RULES, build_certificate, render_certificate, rule_result, write_comparison
from harness.clients.registry import CONTRACT_VERSION, FEATURES, builtin_drivers, driver_info, load_manifest
from harness.errors import HarnessError
from harness.history.store import HistoryWriter

FAULTY = tuple(sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "faulty_drivers").glob("*.json")))


def _manifest(tmp_path, **fields):
    data = {"name": "x", "contract": CONTRACT_VERSION, "command": ["{python}", "d.py"], "features": ["ack:ACCEPT"],
            **fields}
    path = tmp_path / "m.json"
    path.write_text(json.dumps(data))
    return path


def test_builtin_drivers_declare_known_features():
    drivers = builtin_drivers()
    assert {"confluent", "java", "franz"} <= set(drivers)
    for info in drivers.values():
        assert set(info.features) <= set(FEATURES), info
    assert drivers["java"].supports("ack:RENEW") and not drivers["confluent"].supports("ack:RENEW")
    assert drivers["confluent"].ack_types() == ("ACCEPT", "RELEASE", "REJECT")


@pytest.mark.parametrize("fields, message", [
    ({"contract": 5}, "declares contract 5; this harness speaks contracts 1, 2, 3, 4"),
    ({"contract": 1, "features": ["ack:ACCEPT", "unsubscribe"]},
     "features unsubscribe need contract 2; the manifest declares contract 1"),
    ({"command": []}, "`command` must be a non-empty list"),
    ({"name": ""}, "`name` must be a non-empty string"),
    ({"features": ["ack:MAYBE"]}, "unknown features ack:MAYBE"),
])
def test_a_bad_manifest_is_one_line_naming_the_fix(tmp_path, fields, message):
    with pytest.raises(HarnessError, match=message.replace("`", ".")):
        load_manifest(_manifest(tmp_path, **fields))


def test_manifest_paths_and_unknown_clients(tmp_path):
    (tmp_path / "d.py").write_text("")
    info = load_manifest(_manifest(tmp_path))
    driver = info.make("c", {"behaviour": "step"}, None, tmp_path)
    argv = driver.command_line()
    assert argv[0] == sys.executable and argv[1] == str(tmp_path / "d.py") and json.loads(argv[-1])["behaviour"] == "step"
    with pytest.raises(HarnessError, match="unknown client 'nope'"):
        driver_info("nope")
    with pytest.raises(HarnessError, match="not valid JSON"):
        (tmp_path / "bad.json").write_text("{")
        load_manifest(tmp_path / "bad.json")


@pytest.mark.parametrize("name", FAULTY)
def test_the_faulty_drivers_are_valid_manifests(name):
    from pathlib import Path
    info = load_manifest(Path(__file__).resolve().parents[2] / "faulty_drivers" / f"{name}.json")
    assert info.name.startswith("faulty-") and info.supports("implicit")


def _driver_printing(tmp_path, start_value):
    """A driver whose process prints one start event with `start_value` and waits for stdin to close."""
    from harness.clients.driver import ExternalStepDriver
    script = tmp_path / "fake.py"
    script.write_text("import json, sys\n"
                      f"print(json.dumps({{'type': 'ok', 'f': 'start', 'value': {start_value!r}}}), flush=True)\n"
                      "sys.stdin.readline()\n")
    history = HistoryWriter(tmp_path / "history.jsonl")
    driver = ExternalStepDriver("consumer-0", {}, history, tmp_path, [sys.executable, str(script)])
    driver.start()
    deadline = time.monotonic() + 20
    while not any(op.f == "start" for op in history.ops()) and time.monotonic() < deadline:
        time.sleep(0.05)
    driver.close(5)
    return driver, history


def test_a_driver_speaking_another_contract_is_refused(tmp_path):
    driver, history = _driver_printing(tmp_path, {"client": "fake", "contract": 7})
    assert driver.contract_error and "speaks contract 7" in driver.contract_error


def test_a_driver_speaking_this_contract_is_taken(tmp_path):
    driver, history = _driver_printing(tmp_path, {"client": "fake", "contract": CONTRACT_VERSION})
    assert driver.contract_error is None
    assert [op.f for op in history.ops()] == ["start"]


def _row(rule, result, reason="", run_dir=""):
    return {"rule": rule, "test": f"suites/conformance/test_x.py::test_{rule}", "result": result, "reason": reason,
            "run_dir": run_dir}


def test_rule_results():
    assert rule_result([])[0] == "not-run"
    assert rule_result([_row("a", "pass")])[0] == "pass"
    assert rule_result([_row("a", "pass"), _row("a", "fail", "AssertionError: x")])[:2] == \
        ("fail", "test_a: AssertionError: x")
    assert rule_result([_row("a", "skipped", "not supported by the confluent driver: ack:RENEW")])[0] == "not-supported"
    assert rule_result([_row("a", "skipped", "needs Kafka 4.3 or later")])[0] == "not-applicable"
    assert rule_result([_row("a", "xfail", "KAFKA-1")])[0] == "known-deviation"
    assert rule_result([_row("a", "xpass")])[0] == "fail"


def test_certificate_verdicts(tmp_path):
    rules = ["ack-accept", "ack-renew"]
    passing = {"kafka_version": "4.3.1", "target": "local", "tests": [
        _row("ack-accept", "pass"), _row("ack-renew", "skipped", "not supported by the confluent driver: ack:RENEW")]}
    cert = build_certificate(passing, "confluent", 1, rules, "share-harness certify --client confluent", 0)
    assert cert["verdict"] == "CERTIFIED" and cert["counts"]["pass"] == 1 and cert["counts"]["not-supported"] == 1
    failing = {**passing, "tests": [_row("ack-accept", "fail", "AssertionError: lost")]}
    cert = build_certificate(failing, "confluent", 1, rules, "cmd", 1)
    assert cert["verdict"] == "NOT CERTIFIED"
    assert [r["result"] for r in cert["rules"]] == ["fail", "not-run"]
    assert "AssertionError: lost" in render_certificate(cert)
    assert build_certificate({"tests": []}, "confluent", 1, rules, "cmd", 5)["verdict"] == "UNKNOWN"
    assert build_certificate(passing, "confluent", 1, rules, "cmd", 2)["verdict"] == "UNKNOWN"  # interrupted
    only_skips = {**passing, "tests": [_row("ack-accept", "skipped", "needs Kafka 4.3")]}
    assert build_certificate(only_skips, "confluent", 1, rules, "cmd", 0)["verdict"] == "UNKNOWN"
    errored = {**passing, "tests": [_row("ack-accept", "error", "cluster did not start"), passing["tests"][1]]}
    cert = build_certificate(errored, "confluent", 1, rules, "cmd", 1)
    assert cert["verdict"] == "UNKNOWN" and cert["rules"][0]["result"] == "error"
    assert build_certificate(passing, "confluent", 1, rules, "cmd", 1)["verdict"] == "UNKNOWN"  # a tear-down failed
    missing = {**passing, "tests": [_row("ack-accept", "pass")]}
    assert build_certificate(missing, "confluent", 1, rules, "cmd", 0)["verdict"] == "UNKNOWN"  # ack-renew not run


def test_comparison_page_shows_complete_certificates_a_column_per_client(tmp_path):
    def write(name, driver, failing=(), rules=tuple(RULES)):
        rows = [_row(rule, "fail" if rule in failing else "pass") for rule in rules]
        cert = build_certificate({"kafka_version": "4.3.1", "target": "local", "tests": rows}, driver, 1,
                                 list(rules), "cmd", 1 if failing else 0)
        (tmp_path / name).mkdir()
        (tmp_path / name / "certificate.json").write_text(json.dumps(cert))
    write("20260-confluent", "confluent")
    write("20261-java", "java", failing=("ack-accept",))
    write("20262-java", "java", rules=("ack-reject",))  # newer, but of one rule only: not on the page
    text = write_comparison(tmp_path).read_text()
    row = next(line for line in text.splitlines() if "`ack-accept`" in line)
    assert row.endswith("| pass | FAIL |"), row
    assert "**CERTIFIED**" in text and "**NOT CERTIFIED**" in text and "20262-java" not in text
    assert sum(1 for line in text.splitlines() if line.startswith("| ") and "`" in line) == len(RULES)


def test_an_acknowledgement_of_a_record_no_poll_handed_over_is_flagged():
    from harness.checkers import check_safe
    from harness.checkers.registry import CHECKERS
    from harness.history.events import EventTable
    from harness.history.store import Op

    def ops(ack_offsets):
        # (with the run's config: a history without it is unknown everywhere)
        rows = [Op(0, 0, "harness", "ok", "config", {"delivery_count_limit": 5, "lock_duration_ms": 30000})]
        rows += [Op(0, 0, "producer", "ok", "produce", {"topic": "t", "partition": 0, "offset": o, "id": f"r{o}"})
                 for o in range(3)]
        rows.append(Op(3, 1, "c", "ok", "poll", {"records": [
            {"id": "r0", "topic": "t", "partition": 0, "offset": 0, "delivery_count": 1}]}))
        rows.append(Op(4, 2, "c", "ok", "acknowledge", {"records": [
            {"topic": "t", "partition": 0, "offset": o, "type": "ACCEPT"} for o in ack_offsets]}))
        rows.append(Op(5, 3, "c", "ok", "commit", {"results": [{"topic": "t", "partition": 0, "error": None}]}))
        return rows
    flagged = check_safe("ack-results", CHECKERS["ack-results"], EventTable.from_ops(ops([0, 2])))
    assert flagged.valid is False and [a.kind for a in flagged.anomalies] == ["ack-undelivered"]
    assert "t-0@2" in flagged.anomalies[0].message
    fine = check_safe("ack-results", CHECKERS["ack-results"], EventTable.from_ops(ops([0])))
    assert fine.valid is not False


def test_every_rule_cites_its_sentence_and_has_a_test():
    """A rule rests on a sentence (KIP-932, a follow-up KIP, or a client-API contract a library may
    declare: then a driver feature), and some conformance test decides it (else it is never decided)."""
    import re
    from pathlib import Path

    from harness.certify.rules import CLIENT_RULES
    suites = Path(__file__).resolve().parents[3] / "suites" / "conformance"
    marked = set(re.findall(r'mark\.rule\("([a-z-]+)"\)', "".join(p.read_text() for p in suites.glob("test_*.py"))))
    assert set(CLIENT_RULES) == marked, (set(CLIENT_RULES) ^ marked)
    for rule_id, rule in CLIENT_RULES.items():
        assert rule.source and len(rule.sentence) > 20 and rule.statement, rule_id
        assert not rule.feature or rule.feature in FEATURES, rule_id
    assert CLIENT_RULES["no-mixing"].feature == "ack_mode_setting"  # the Java API's setting, not the KIP's
    assert not driver_info("franz").supports("ack_mode_setting") and driver_info("java").supports("renew_hand_back")


def test_an_inconclusive_rule_is_never_certified():
    from harness.conformance.outcomes import PREFIX
    rules = ["ack-accept", "lock-expiry"]
    rows = [_row("ack-accept", "pass"), _row("lock-expiry", "inconclusive", PREFIX + "the record never came")]
    assert rule_result(rows[1:])[0] == "inconclusive"
    cert = build_certificate({"kafka_version": "4.4.0", "target": "local", "tests": rows}, "franz", 1, rules, "cmd", 1)
    assert cert["verdict"] == "INCONCLUSIVE" and cert["counts"]["inconclusive"] == 1
    assert "inconclusive" in render_certificate(cert)
    failing = rows + [_row("ack-accept", "fail", "AssertionError: x")]
    assert build_certificate({"tests": failing}, "franz", 1, rules, "cmd", 1)["verdict"] == "NOT CERTIFIED"
    # pytest failed (exit 1) with no rule failed nor inconclusive: something outside the rules went wrong
    assert build_certificate({"tests": [_row("ack-accept", "pass"), _row("lock-expiry", "pass")]}, "franz", 1, rules,
                             "cmd", 1)["verdict"] == "UNKNOWN"


def test_a_failed_report_of_a_precondition_is_inconclusive():
    from types import SimpleNamespace

    from harness.conformance.outcomes import PREFIX, Inconclusive, precondition
    from harness.conformance.report import Row, area_result, outcome
    with pytest.raises(Inconclusive, match="the batch had one record"):
        precondition(False, "the batch had one record")
    precondition(True, "unused")
    crash = SimpleNamespace(message=f"harness.conformance.outcomes.Inconclusive: {PREFIX}the batch had one record")
    report = SimpleNamespace(passed=False, skipped=False, failed=True, when="call", longrepr=SimpleNamespace(
        reprcrash=crash), longreprtext="")
    assert outcome(report)[0] == "inconclusive"
    crash.message = "AssertionError: lost"
    assert outcome(report)[0] == "fail"
    rows = [Row("locks", "t1", "", "pass"), Row("locks", "t2", "", "inconclusive")]
    assert area_result(rows) == "INCONCLUSIVE" and area_result(rows + [Row("locks", "t3", "", "fail")]) == "FAIL"


def test_client_options_are_parsed_checked_and_named(tmp_path):
    from harness.clients.options import label, parse_options, refused
    assert parse_options(["max.concurrent.fetches=0", "client.id=a=b"]) == {"max.concurrent.fetches": "0",
                                                                            "client.id": "a=b"}
    for bad, message in (("novalue", "use KEY=VALUE"), ("=1", "use KEY=VALUE"),
                         ("share.acknowledgement.mode=implicit", "set by each test")):
        with pytest.raises(HarnessError, match=message):
            parse_options([bad])
    assert label({}) == "default" and label({"b": "1", "a": "2"}) == "a=2 b=1"
    assert refused({"x": "1", "y": "2"}, {"ignored_config": ["y", "z"]}) == ["y"]
    with pytest.raises(HarnessError, match="client_options"):
        load_manifest(_manifest(tmp_path, client_options={"group.id": "g"}))
    assert load_manifest(_manifest(tmp_path, client_options={"fetch.max.wait.ms": "100"})).options == \
        {"fetch.max.wait.ms": "100"}


def test_the_franz_driver_refuses_an_option_it_would_ignore():
    """The probe certify runs before any test: a user's option the driver ignores is one line, at once."""
    import shutil

    from harness.clients.options import probe
    if shutil.which("go") is None:
        pytest.skip("needs Go to build the franz-go driver (scripts/install.sh installs it)")
    info = driver_info("franz")
    assert probe(info, {"max.concurrent.fetches": "0"})["ignored_config"] == []
    with pytest.raises(HarnessError, match="does not apply client option no.such.option"):
        probe(info, {"no.such.option": "1"})


def test_an_option_the_library_refuses_at_construction_is_named_with_its_refusal():
    """Driver contract 4: the confluent driver prints a `start` `fail` event when librdkafka refuses the consumer's
    configuration; the probe certify runs before any test says so in one line, with the library's words."""
    from harness.clients.options import probe
    with pytest.raises(HarnessError, match="auto.offset.reset. is not applicable for share consumer"):
        probe(driver_info("confluent"), {"auto.offset.reset": "earliest"})


def test_the_spring_driver_starts_offline_applies_options_and_refuses_41():
    """The spring driver (spring-kafka's share container over the release's KafkaShareConsumer) is built from
    Maven Central's jars at first use, starts with no broker and names an option it would ignore; Kafka 4.1 is
    refused in one line (spring-kafka 4.1 reads AcknowledgeType.RENEW, which kafka-clients 4.1 lacks)."""
    import shutil

    from harness.clients.options import probe
    from harness.clients.registry import unsupported_release
    from harness.kafka.jars import resolve
    from harness.sys.paths import cache_dir
    assert "kafka-clients 4.2+" in unsupported_release("spring", "4.1.2")
    assert unsupported_release("spring", "4.4.0") == ""
    if shutil.which("mvn") is None or shutil.which("javac") is None:
        pytest.skip("needs Maven and a JDK to build the spring driver (scripts/install.sh installs them)")
    info = driver_info("spring")
    assert info.jvm and info.supports("commit_sync") and info.supports("ack:RENEW")
    assert not info.supports("implicit_batch_held")  # (the container commits after each batch)
    start = probe(info, {"client.rack": "r1"}, resolve("4.4.0", cache_dir()))
    assert start["client"] == "spring-kafka" and start["kafka_clients_version"] == "4.4.0", start
    assert start["share_ack_mode"] == "MANUAL" and start["ignored_config"] == [], start
    with pytest.raises(HarnessError, match="does not apply client option no.such.option"):
        probe(info, {"no.such.option": "1"}, resolve("4.4.0", cache_dir()))


def test_a_frameworks_fail_names_the_result_of_the_client_beneath(tmp_path):
    """A spring certificate (its driver reports the kafka-clients it runs on) points at the bare client's
    certificate on the same release, and each FAIL says whether the client beneath fails it too."""
    from harness.certify.certificate import beneath, render_certificate
    java = {"driver": "java", "client_version": "4.4.0", "kafka_version": "4.4.0", "complete": True,
            "client_options": {}, "rules": [{"rule": "ack-accept", "result": "pass"},
                                            {"rule": "ack-order", "result": "fail"}]}
    (tmp_path / "20261128-100000-java").mkdir()
    (tmp_path / "20261128-100000-java" / "certificate.json").write_text(json.dumps(java))
    (tmp_path / "20261128-090000-java").mkdir()  # older, and of another release: not taken
    (tmp_path / "20261128-090000-java" / "certificate.json").write_text(json.dumps({**java, "kafka_version": "4.3.1"}))
    rule = {"statement": "s", "source": "KIP-932", "sentence": "x", "evidence": "e", "anomalies": [], "runs": []}
    cert = {"driver": "spring", "client": "spring-kafka", "client_version": "4.1.2", "kafka_clients_version": "4.4.0",
            "kafka_version": "4.4.0", "cluster": "local", "seed": 1, "created": "now", "verdict": "NOT CERTIFIED",
            "counts": {"fail": 2}, "reproduce": "r", "rules": [{**rule, "rule": "ack-accept", "result": "fail"},
                                                               {**rule, "rule": "ack-order", "result": "fail"}]}
    cert["beneath"] = beneath(cert, tmp_path)
    assert cert["beneath"]["certificate"] == "20261128-100000-java", cert["beneath"]
    text = render_certificate(cert)
    assert "Runs on kafka-clients 4.4.0" in text
    assert "FAIL (the client beneath fails it too)" in text and "pass (the client beneath passes it: the framework's cause)" in text
    assert beneath({**cert, "kafka_version": "4.2.2"}, tmp_path)["certificate"] is None
    assert beneath({"driver": "java", "client_version": "4.4.0"}, tmp_path) is None  # a bare client: nothing beneath


def test_evidence_leaves_out_what_an_early_stop_explains_and_runs_are_kept(tmp_path):
    from harness.certify.certificate import _evidence, keep_runs
    run = tmp_path / "runs" / "20261127-x"
    run.mkdir(parents=True)
    anomalies = [{"kind": "not-accepted", "message": "left acquired"}, {"kind": "lost", "message": "never polled"},
                 {"kind": "count-regressed", "message": "count 1 after 2"}]
    run.joinpath("verdict.json").write_text(json.dumps({"ended_early": True, "results": [
        {"checker": "no-loss", "valid": False, "anomalies": anomalies}]}))
    run.joinpath("history.jsonl").write_text("{}\n")
    lines = _evidence([str(run)])
    assert lines[0] == "no-loss: count-regressed: count 1 after 2" and "2 not-accepted/lost anomalies" in lines[1]
    run.joinpath("verdict.json").write_text(json.dumps({"results": [
        {"checker": "no-loss", "valid": False, "anomalies": anomalies}]}))
    assert len(_evidence([str(run)])) == 3  # a test that ran to its end: every anomaly is evidence
    cert = {"rules": [{"runs": [str(run)]}, {"runs": [str(run)]}]}
    out = tmp_path / "cert"
    keep_runs(cert, out)
    assert cert["rules"][0]["runs"] == ["runs/20261127-x"] == cert["rules"][1]["runs"]
    assert (out / "runs" / "20261127-x" / "history.jsonl").is_file()


def test_the_comparison_has_a_column_per_client_configuration(tmp_path):
    def write(name, options):
        rows = [_row(rule, "pass") for rule in RULES]
        cert = build_certificate({"kafka_version": "4.4.0", "target": "local", "tests": rows}, "franz", 1,
                                 list(RULES), "cmd", 0, options)
        (tmp_path / name).mkdir()
        (tmp_path / name / "certificate.json").write_text(json.dumps(cert))
    write("1-franz", {})
    write("2-franz", {"max.concurrent.fetches": "0"})
    header = write_comparison(tmp_path).read_text().splitlines()[4]
    assert header.count("franz (") == 2 and "`max.concurrent.fetches=0`" in header, header


def test_a_rule_passes_only_on_a_passed_test():
    assert rule_result([_row("a", "skipped", "needs Kafka 4.3"), _row("a", "pass")])[0] == "pass"
    assert rule_result([_row("a", "weird")])[0] == "error"


def test_options_of_a_driver_that_does_not_say_what_it_ignores_are_refused():
    from harness.clients.options import refusal, refused
    assert refused({"x": "1"}, {}) == ["x"] and refused({}, {}) == []
    assert "does not say which client properties it ignores" in refusal("d", ["x"], {})


def test_the_mutant_script_counts_a_class_caught_only_on_the_rule_it_breaks():
    import importlib.util
    spec = importlib.util.spec_from_file_location("certify_mutants", Path(__file__).resolve().parents[3] / "scripts"
                                                  / "certify_mutants.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    found = mod.mutants()
    assert len(found) == len(FAULTY) >= 13
    assert all(m.get("bug_class") and m.get("breaks") and set(m["breaks"]) <= set(RULES) and m.get("evidence")
               for _, m in found), [p.stem for p, m in found if not m.get("evidence")]
    cert = {"verdict": "NOT CERTIFIED", "rules": [{"rule": "ack-order", "result": "fail", "evidence": "in the order"},
                                                  {"rule": "ack-accept", "result": "pass", "evidence": ""}]}
    assert mod.caught(cert, ["ack-order"]) == (True, ["ack-order"])
    assert mod.caught(cert, ["ack-order"], "in the order")[0] is True
    assert mod.caught(cert, ["ack-order"], "something else")[0] is False  # failed, but not by the bug's evidence
    assert mod.caught(cert, ["ack-order", "ack-accept"])[0] is False  # every rule it breaks must fail
    assert mod.caught(cert, ["close-releases"])[0] is False  # failed, but not on the rule its bug breaks
    assert mod.caught(cert, [])[0] is False
    assert mod.caught({"verdict": "UNKNOWN", "rules": []}, ["ack-order"])[0] is None
    lines = mod.summary([("a", "close lies", True, ["close-releases"]), ("b", "close lies", False, [])])
    assert lines[0].endswith("1/2 caught") and "all classes: 1/2 caught" in lines


def test_close_rules_allow_half_the_session_timeout_at_most_ten_seconds():
    """A close() that did nothing is caught before the coordinator would time its member out (and release
    what it held) anyway: close-releases and close-leaves wait half the session timeout, at most 10 s."""
    from types import SimpleNamespace

    from harness.conformance.session import ShareSession
    bound = ShareSession.after_close_s.fget
    assert bound(SimpleNamespace(limits={"session_timeout_ms": 10000})) == 5.0
    assert bound(SimpleNamespace(limits={"session_timeout_ms": 45000})) == 10.0
    assert bound(SimpleNamespace(limits={})) == 10.0  # Kafka's default, 45 s


def test_a_broker_cross_check_that_cannot_read_the_group_is_inconclusive_not_a_fail():
    """assert_settled_by_the_broker: a failed read of the group decides nothing (inconclusive); records the
    broker has not settled are the client's FAIL."""
    from types import SimpleNamespace

    from harness.conformance.admin_ops import AdminOperations
    from harness.conformance.outcomes import Inconclusive, is_inconclusive
    from harness.errors import HarnessError

    def unreadable():
        raise HarnessError("reading the share group's offsets failed")

    def session(unsettled, why=""):
        return SimpleNamespace(unsettled=unsettled, broker_side_unreadable=lambda: why)
    with pytest.raises(Inconclusive) as caught:
        AdminOperations.assert_settled_by_the_broker(session(unreadable), "reported", within_s=0)
    assert is_inconclusive(str(caught.value)) and "offsets failed" in str(caught.value)
    with pytest.raises(Inconclusive):  # nothing written: nothing to cross-check
        AdminOperations.assert_settled_by_the_broker(session(lambda: None), "reported", within_s=0)
    with pytest.raises(AssertionError) as caught:
        AdminOperations.assert_settled_by_the_broker(session(lambda: {0: {"lag": 2}}), "reported", within_s=0)
    assert not isinstance(caught.value, Inconclusive) and "had not settled" in str(caught.value)
    AdminOperations.assert_settled_by_the_broker(session(lambda: {}), "reported", within_s=0)
    # an implementation that serves no read of the group (the mock): the cross-check is not made, so the test is
    # skipped as not supported there (recorded in the history), never passed
    appended = []
    mock = SimpleNamespace(create_topic=lambda *a: None, set_group_configs=lambda *a: {})
    with pytest.raises(pytest.skip.Exception, match=r"needs DescribeShareGroupOffsets, to cross-check that reported \(Admin API\)"):
        AdminOperations.assert_settled_by_the_broker(
            SimpleNamespace(unsettled=unreadable, broker_side_unreadable=lambda: "no state to read", cluster=mock,
                            history=SimpleNamespace(append=lambda *op: appended.append(op))), "reported", within_s=0)
    assert appended == [("harness", "info", "cross-check", {"reported": "reported", "not_made": "no state to read"})]


def test_a_contract_1_driver_is_taken_and_runs_the_rules_its_contract_serves(tmp_path):
    """Driver contract 2 added `unsubscribe` (issue 49); a contract-1 driver is still run: on a rule needing the
    newer command it is "not run: older contract", never "not supported" and never a failure."""
    info = load_manifest(_manifest(tmp_path, contract=1))
    assert info.contract == 1 and info.older_contract("ack:ACCEPT") is None
    why = info.older_contract("unsubscribe")
    assert why.startswith("older contract: the driver speaks contract 1; unsubscribe came with contract 2")
    assert builtin_drivers()["confluent"].older_contract("unsubscribe") is None


@pytest.mark.parametrize("name", FAULTY)
def test_each_faulty_drivers_evidence_is_text_its_rule_can_print(name):
    """A faulty driver's `evidence` is text the first rule it breaks can print: it is in the conformance file that
    holds that rule's test, or in the harness's own messages (an offline guard: a reworded assertion would otherwise
    show only when CI certifies the driver)."""
    root = Path(__file__).resolve().parents[3]
    manifest = json.loads((root / "tests" / "faulty_drivers" / f"{name}.json").read_text())
    rule, evidence = manifest["breaks"][0], manifest["evidence"]
    files = [p for p in (root / "suites" / "conformance").glob("test_*.py") if f'mark.rule("{rule}"' in p.read_text()]
    assert files, f"no conformance test carries rule {rule}"
    sources = [p.read_text() for p in files] + [p.read_text() for p in (root / "harness").rglob("*.py")]
    assert any(evidence in text for text in sources), f"{name}: evidence {evidence!r} is printed nowhere for {rule}"


def test_a_contract_2_driver_is_not_run_on_the_rules_of_contract_3(tmp_path):
    """Driver contract 3 added `subscribe`/`subscription`, an `ack` without a type, `ack` by offset and the `default`
    mode (issue 49): a contract-2 driver is "not run" on them, and a contract-2 manifest declaring one is refused."""
    info = load_manifest(_manifest(tmp_path, contract=2))
    assert info.older_contract("unsubscribe") is None
    for feature in ("subscribe", "ack_default", "ack_by_offset", "mode_default", "lock_timeout", "default_timeouts",
                    "poll_once", "negative_timeout_refused", "wakeup"):
        assert info.older_contract(feature).startswith(f"older contract: the driver speaks contract 2; {feature} came "
                                                       f"with contract 3"), feature
        assert builtin_drivers()["confluent"].older_contract(feature) is None
    with pytest.raises(HarnessError, match="features subscribe need contract 3; the manifest declares contract 2"):
        load_manifest(_manifest(tmp_path, contract=2, features=["ack:ACCEPT", "subscribe"]))


def test_a_contract_3_driver_is_not_run_on_the_rules_of_contract_4(tmp_path):
    """Driver contract 4 added a refused construction as a `start` `fail` event, `client_instance_id` and `poll_once`'s
    `wakeup_after` (issue 49): a contract-3 driver is "not run" on them; the Java driver serves all three and the
    confluent driver the refusal."""
    info = load_manifest(_manifest(tmp_path, contract=3))
    for feature in ("config_refusal", "client_instance_id", "wakeup_thread"):
        assert info.older_contract(feature).startswith(f"older contract: the driver speaks contract 3; {feature} came "
                                                       f"with contract 4"), feature
        assert feature in builtin_drivers()["java"].features
    assert "config_refusal" in builtin_drivers()["confluent"].features
    with pytest.raises(HarnessError, match="features wakeup_thread need contract 4; the manifest declares contract 3"):
        load_manifest(_manifest(tmp_path, contract=3, features=["ack:ACCEPT", "wakeup_thread"]))


def test_a_certificate_with_rules_not_run_for_an_older_contract_is_never_plain_certified():
    from harness.certify.certificate import build_certificate
    why = "older contract: the driver speaks contract 1; unsubscribe came with contract 2 (...)"
    rows = [{"rule": "ack-accept", "test": "t::a", "result": "pass", "reason": "", "run_dir": None},
            {"rule": "unsubscribe-stops", "test": "t::u", "result": "skipped", "reason": why, "run_dir": None}]
    cert = build_certificate({"kafka_version": "4.4.0", "tests": rows}, "x", 1, ["ack-accept", "unsubscribe-stops"],
                             "share-harness certify", 0)
    results = {r["rule"]: r["result"] for r in cert["rules"]}
    assert results == {"ack-accept": "pass", "unsubscribe-stops": "older-contract"}
    assert cert["verdict"] == "CERTIFIED ON AN OLDER CONTRACT (1 NOT RUN)"
    assert cert["counts"]["older-contract"] == 1


def test_a_certification_collects_only_the_files_of_its_rules():
    """The certify child is given the conformance files holding its rules' marks (a text scan), never fewer:
    every rule is found by the scan, and a rule the scan cannot find falls back to the whole suite."""
    from harness.certify.certificate import rule_files
    suite = Path(__file__).resolve().parents[3] / "suites" / "conformance"
    every = rule_files(suite, list(RULES))
    assert every != [suite] and all(p.parent == suite for p in every)  # the scan finds every rule's mark
    for rule in RULES:
        files = rule_files(suite, [rule])
        assert files and all(f'mark.rule("{rule}"' in p.read_text() for p in files), (rule, files)
    assert rule_files(suite, ["no-such-rule"]) == [suite]
