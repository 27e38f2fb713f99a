"""Certification can fail: each deliberately faulty driver (tests/faulty_drivers) is certified on the
real cluster for the rules its fault breaks, and the certificate must say NOT CERTIFIED with those rules
failed, with evidence. A certificate that cannot fail is worthless. (Half of the drivers; the other half:
tests/real/test_certify_real_more.py, so that two CI workers share them.)"""

import pytest

from tests.faulty_drivers import HERE, faulty_params

pytestmark = [pytest.mark.real, pytest.mark.cluster]
HALF = 0


def certify_faulty(kafka_cluster, ksh_spec, tmp_path, name, manifest):
    from harness.certify.certificate import Certification, certify
    from harness.spec import RunSpec
    breaks, evidence = manifest["breaks"], manifest["evidence"]
    # (a rule decided on the suite's own cluster, with settings of the harness's choosing, needs certify to
    # start that cluster itself: given the session cluster's address it would be "not applicable")
    bootstrap = None if manifest.get("own_cluster") else kafka_cluster.bootstrap_servers
    spec = RunSpec(client=str(HERE / f"{name}.json"), kafka_version=kafka_cluster.version,
                   bootstrap_servers=bootstrap, seed=ksh_spec.seed, rules=tuple(breaks))
    cert, out = certify(Certification(spec, out_root=tmp_path, quiet=True))
    log = (out / "pytest.log").read_text()[-3000:]
    results = {r["rule"]: r for r in cert["rules"]}
    assert sorted(results) == sorted(breaks), (sorted(results), breaks)
    assert all(r["result"] == "fail" for r in results.values()), ({k: r["result"] for k, r in results.items()}, log)
    first = results[breaks[0]]
    assert evidence in first["evidence"], (first["evidence"], log)
    assert cert["verdict"] == "NOT CERTIFIED", cert["verdict"]
    assert (out / "junit.xml").is_file() and (out / "certificate.md").is_file()
    assert f"| FAIL | {first['evidence'][:40]}" in (out / "certificate.md").read_text()


@pytest.mark.parametrize("name, manifest", faulty_params(HALF))
def test_certifying_a_faulty_driver_fails_the_rules_it_breaks(kafka_cluster, ksh_spec, tmp_path, name, manifest):
    certify_faulty(kafka_cluster, ksh_spec, tmp_path, name, manifest)
