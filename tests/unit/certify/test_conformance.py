"""Conformance plumbing without a cluster: version gating, the area report, `run --suite`."""

import pytest

from harness.conformance import error_is, missing_requirement
from harness.conformance.report import AREAS, Row, area_result, render_markdown, write_report


def test_requirements_skip_with_the_reason():
    assert missing_requirement("4.3.1", line="4.3") is None
    assert missing_requirement("4.2.1", line="4.3") == "needs Kafka 4.3 or later; the cluster runs 4.2.1"
    assert missing_requirement("4.3.1", group_config="delivery_count_limit") is None
    assert "no group-level config for delivery count limit" in missing_requirement(
        "4.2.1", group_config="delivery_count_limit")


def test_error_names_of_both_clients_match_the_kafka_code():
    assert error_is("INVALID_RECORD_STATE: Broker: The record state is invalid", "INVALID_RECORD_STATE")
    assert error_is("InvalidRecordStateException: The record state is invalid.", "INVALID_RECORD_STATE")
    assert not error_is(None, "INVALID_RECORD_STATE") and not error_is("TimeoutException: x", "INVALID_RECORD_STATE")


def test_area_result_fails_on_any_failure_and_needs_a_pass():
    row = lambda result: Row("ordering", "t", "b", result)  # noqa: E731
    assert area_result([row("pass"), row("skipped")]) == "PASS"
    assert area_result([row("pass"), row("fail")]) == "FAIL"
    assert area_result([row("pass"), row("error")]) == "FAIL"
    assert area_result([row("skipped")]) == "SKIPPED"
    assert area_result([]) == "NOT RUN"
    assert area_result([row("pass"), row("xfail")]) == "KNOWN DEVIATION"
    assert area_result([row("pass"), row("unknown"), row("xfail")]) == "UNKNOWN"  # a test whose process died
    assert area_result([row("unknown"), row("fail")]) == "FAIL"


def test_a_test_whose_process_died_after_its_setup_stays_unknown():
    from types import SimpleNamespace as NS

    from harness.conformance.report import UNFINISHED, report_row
    setup = NS(when="setup", passed=True, skipped=False, failed=False)
    assert report_row(setup) == ("unknown", UNFINISHED)  # until the call's report replaces it
    call = NS(when="call", passed=True, skipped=False, failed=False)
    assert report_row(call) == ("pass", "")
    assert report_row(NS(when="teardown", passed=True, skipped=False, failed=False)) is None


def test_report_lists_every_area_with_results_and_skip_reasons(tmp_path):
    rows = [Row("acknowledgement", "suites/conformance/test_acknowledgement.py::test_a", "ACCEPT is final", "pass"),
            Row("delivery-count", "suites/conformance/test_delivery_count.py::test_b", "group limit", "skipped",
                "needs Kafka 4.3 or later; the cluster runs 4.2.1"),
            Row("locks", "suites/conformance/test_locks.py::test_c", "lock expiry", "fail", "AssertionError: x")]
    text = render_markdown(rows, "4.2.1", "local")
    for title in AREAS.values():
        assert f"| {title} |" in text
    assert "| Acknowledgement | PASS | 1 | 0 | 0 | 0 | 0 | 0 |" in text
    assert "| Delivery counts and limits | SKIPPED | 0 | 0 | 0 | 0 | 0 | 1 |" in text
    assert "| Acquisition locks | FAIL | 0 | 1 | 0 | 0 | 0 | 0 |" in text
    assert "needs Kafka 4.3 or later" in text and "| Transactions | NOT RUN |" in text
    path = write_report(rows, "4.2.1", "local", tmp_path)
    assert path.read_text() == text and (tmp_path / "conformance.json").is_file()


def test_run_suite_option_is_validated():
    from harness.cli import build_parser
    args = build_parser().parse_args(["run", "--suite", "conformance", "--kafka-version", "4.3.1"])
    assert args.suite == "conformance"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--suite", "nonsense"])
