"""Certification can fail: the other half of the faulty drivers (see tests/real/test_certify_real.py)."""

import pytest

from tests.faulty_drivers import faulty_params
from tests.real.test_certify_real import certify_faulty

pytestmark = [pytest.mark.real, pytest.mark.cluster]
HALF = 1


@pytest.mark.parametrize("name, manifest", faulty_params(HALF))
def test_certifying_a_faulty_driver_fails_the_rules_it_breaks(kafka_cluster, ksh_spec, tmp_path, name, manifest):
    certify_faulty(kafka_cluster, ksh_spec, tmp_path, name, manifest)
