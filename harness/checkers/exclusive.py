"""Exclusive acquisition: a record is never delivered again while an earlier
acquisition lock on it is live and was not released (RELEASE sent, owner's
session ended), and an acknowledgement from a consumer that lost the record
to another never succeeds. The lock counts as live for `lock_duration_ms -
lock_tolerance_ms` after the poll (config operation; tolerance default
2000 ms, RunSpec `lock_tolerance_ms`). Anomalies: `acquired-while-locked`,
`ack-from-non-owner`. Allowance: `acquired-lost-on-leader-change`.
"""

from __future__ import annotations

from typing import Any

from harness.checkers import Result, property_result

NAME = "exclusive-acquisition"


def check(history: Any) -> Result:
    return property_result(NAME, history)
