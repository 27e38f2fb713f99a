"""The tested set's baseline of a run's failures, and runs read back from an earlier invocation's directory."""

import json

from harness.drift import baseline, main as drift, runner
from harness.drift.outcomes import BOTH, NEW, Row, Run, TestOutcome, failures
from harness.kafka.spring_jars import SPRING_KAFKA_VERSION
from harness.kafka.versions import DEFAULT_VERSION
from harness.tested_set import LOCK, go_pins

C = "suites/conformance/"


def test_only_unexplained_failures_of_a_run_under_which_something_moved_are_run_again():
    row = Row("CLIENT_DEVIATIONS", "r", "franz", (f"{C}a.py::explained",))
    tests = (TestOutcome(f"{C}a.py::ok", "passed"), TestOutcome(f"{C}a.py::bad", "failed", "boom"),
             TestOutcome(f"{C}a.py::explained", "xfailed", "franz deviation r: x"),
             TestOutcome(f"{C}a.py::crashed", "failed", "worker 'gw0' crashed while running 'x'"),
             TestOutcome(f"{C}a.py::broken", "error", "fixture"))
    moved = Run("franz", "v1.99.0", "4.4.0", tests, moved=("franz v1.22.2 -> v1.99.0",))
    assert baseline.to_rerun(moved, [row]) == [f"{C}a.py::bad", f"{C}a.py::broken"]
    assert baseline.to_rerun(Run("franz", "v1.22.2", "4.4.0", tests, moved=()), [row]) == []


def test_the_tested_target_pins_the_client_and_takes_the_lines_newest_known_release():
    franz = baseline.tested_target("franz", "4.3.2")
    assert franz.kafka_version == "4.3.1" and franz.kafka_args == ("--kafka-version", "4.3.1")
    assert franz.env == (("KSH_FRANZ_GO_VERSION", go_pins()["github.com/twmb/franz-go"]),) and franz.moved == ()
    assert baseline.tested_target("spring", DEFAULT_VERSION).env == (("KSH_SPRING_KAFKA_VERSION", SPRING_KAFKA_VERSION),)
    assert baseline.tested_target("java", "4.3.2").client_version == "4.3.1"


def test_a_runs_own_baseline_decides_its_failures():
    a, b = f"{C}a.py::t1", f"{C}a.py::t2"
    run = Run("franz", "v1.99.0", "4.4.0", (TestOutcome(a, "failed", "A"), TestOutcome(b, "failed", "B")),
              moved=("franz v1.22.2 -> v1.99.0",), baseline=(TestOutcome(a, "failed"), TestOutcome(b, "passed")),
              baseline_note="the same tests on the tested set")
    got = {f.nodeid: f for f in failures([run], [], {"franz": (TestOutcome(b, "failed"),)})}  # the run's own wins
    assert (got[a].kind, got[a].note) == (BOTH, "the same tests on the tested set")
    assert got[b].kind == NEW and got[b].note == "tested set: passed; the same tests on the tested set"
    unmade = Run("franz", "v1.99.0", "4.4.0", (TestOutcome(a, "failed", "A"),), moved=("x",),
                 baseline_note="the tested set's run of its failures could not be made: go missing")
    assert [f.note for f in failures([unmade], [])] == ["the tested set's run of its failures could not be made: go missing"]


JUNIT = f"""<testsuites><testsuite><testcase classname="x" name="t1" file="{C}a.py" /></testsuite></testsuites>"""


def _store(out, name, log, rc=None, junit=JUNIT):
    (out / f"{name}.log").write_text(log)
    if junit is not None:
        (out / f"{name}.junit.xml").write_text(junit)
    if rc is not None:
        (out / f"{name}.rc").write_text(f"{rc}\n")


def test_stored_runs_are_read_back_with_their_exit_status(tmp_path):
    target = runner.Target("java", "4.4.0", "4.4.0", ("--kafka-version", "4.4.0"))
    _store(tmp_path, "java-kafka-4.4.0", f"$ python -m pytest {C}a.py -k 'x y' -q\n1 passed in 2.00s\n", rc=0)
    _store(tmp_path, "java-kafka-4.4.0-tested", "1 failed in 1.00s\n", rc=1)  # a baseline: not a run of its own
    _store(tmp_path, "franz-kafka-4.3.2", "..\n1 failed, 9 passed in 9.00s (0:00:09)\n")  # stored before the .rc
    _store(tmp_path, "spring-kafka-4.4.0", "...\n!!!!!!! KeyboardInterrupt !!!!!!\n", junit=None)
    assert runner.stored_runs(tmp_path) == [("franz", "4.3.2"), ("java", "4.4.0")]
    assert runner.stored_selection(tmp_path) == (f"{C}a.py", "-k", "x y")  # from the first log that has its command
    java = runner.stored_run(target, tmp_path, "java-kafka-4.4.0")
    assert java.why == "" and [t.nodeid for t in java.outcomes] == [f"{C}a.py::t1"]
    assert runner.stored_run(target, tmp_path, "franz-kafka-4.3.2").why == ""  # 1 failed: a verdict
    (tmp_path / "java-kafka-4.4.0.rc").write_text("5\n")
    assert "pytest exit 5: no test passed" in runner.stored_run(target, tmp_path, "java-kafka-4.4.0").why
    spring = runner.stored_run(target, tmp_path, "spring-kafka-4.4.0")
    assert "could not be read" in spring.why and spring.outcomes == ()
    (tmp_path / "spring-kafka-4.4.0.junit.xml").write_text(JUNIT)
    assert "not recorded" in runner.stored_run(target, tmp_path, "spring-kafka-4.4.0").why


def test_stored_reads_every_run_and_the_certificates_of_an_earlier_invocation(tmp_path):
    _store(tmp_path, f"java-kafka-{DEFAULT_VERSION}", "$ python -m pytest suites/conformance -q\n1 passed in 2.00s\n", 0)
    context = ({"franz": ["v1.22.2"], "spring": [SPRING_KAFKA_VERSION]}, LOCK.read_text(), (), tmp_path)
    runs, certs = drift.stored(["java"], context, skip_certify=False)
    assert [(r.client, r.kafka_version, r.moved, r.why) for r in runs] == [("java", DEFAULT_VERSION, (), "")]
    assert certs == []  # the earlier invocation certified nothing
    (tmp_path / "certificates" / "20261208-000000-java").mkdir(parents=True)
    (tmp_path / "certificates" / "20261208-000000-java" / "certificate.json").write_text(json.dumps(
        {"verdict": "CERTIFIED", "rules": [{"rule": "a", "result": "pass"}]}))
    [cert] = drift.stored(["java"], context, skip_certify=False)[1]
    assert cert.newest.startswith("CERTIFIED") and cert.decided
