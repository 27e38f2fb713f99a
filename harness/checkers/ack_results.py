"""Acknowledgement results: every acknowledgement gets a result (a commit's
per-partition result, a commit that failed or raised, or an acknowledgement
commit callback listing its offset), none gets two callbacks, and no callback
reports an offset its consumer never acknowledged. Anomalies:
`ack-result-missing`, `ack-result-duplicate`, `ack-result-unsolicited`, and `ack-undelivered`
(an acknowledgement of an offset no poll handed to any consumer: a client acknowledges only records
it handed to the application).
Allowance: `ack-lost-with-consumer` (the consumer was killed first).
"""

from __future__ import annotations

from typing import Any

from harness.checkers import Result, property_result

NAME = "ack-results"


def check(history: Any) -> Result:
    return property_result(NAME, history)
