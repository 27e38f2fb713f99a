"""Certification can fail: each deliberately faulty driver (tests/faulty_drivers) is certified on the
real cluster for the rule its fault breaks, and the certificate must say NOT CERTIFIED with that rule
failed, with evidence. A certificate that cannot fail is worthless."""

from pathlib import Path

import pytest

pytestmark = [pytest.mark.real, pytest.mark.cluster]

FAULTY = Path(__file__).parent / "faulty_drivers"

#: faulty driver -> the rule its fault breaks, and what the evidence must say (the fault, not any failure)
CASES = {
    "ack_unseen": ("ack-only-given", "acknowledged but never handed over"),
    "drop_records": ("every-record-handed", "the application was not given"),
    "wrong_count": ("delivery-count", "== [1, 2"),
    "out_of_order": ("ack-order", "acknowledged in the order"),
    "close_lies": ("close-releases", "did not reach another consumer within"),
    "commit_empty": ("ack-accept", "returned no per-partition result"),
}


@pytest.mark.parametrize("driver, rule, evidence", [(d, r, e) for d, (r, e) in CASES.items()])
def test_certifying_a_faulty_driver_fails_the_rule_it_breaks(kafka_cluster, ksh_spec, tmp_path, driver, rule,
                                                            evidence):
    from harness.certify import certify
    cert, out = certify(str(FAULTY / f"{driver}.json"), kafka_version=kafka_cluster.version,
                        bootstrap_servers=kafka_cluster.bootstrap_servers, seed=ksh_spec.seed, rules=[rule],
                        out_root=tmp_path, quiet=True)
    [result] = cert["rules"]
    log = (out / "pytest.log").read_text()[-3000:]
    assert result["rule"] == rule and result["result"] == "fail", (result, log)
    assert evidence in result["evidence"], (result["evidence"], log)
    assert cert["verdict"] == "NOT CERTIFIED", cert["verdict"]
    assert (out / "junit.xml").is_file() and (out / "certificate.md").is_file()
    assert f"| FAIL | {result['evidence'][:40]}" in (out / "certificate.md").read_text()
