"""Delivery counts (KIP-932: "Every time that a record is acquired by a consumer
in a share group, its delivery count increments by 1").

Counts start at 1 and rise by one per acquisition; no delivery has a count
above `group.share.delivery.count.limit`; a record delivered at the limit and
not accepted is never delivered again. Anomalies: `count-invalid`,
`beyond-limit`, `count-skipped`, `count-regressed`, `delivered-after-limit`.
Version profile: in 4.1 a record released by a session end has its count
decreased (so the next delivery repeats the count and the limit does not
archive it). Allowances: `unobserved-acquisition`, `delivery-count-lag`.
"""

from __future__ import annotations

from typing import Any

from harness.checkers import Result, property_result

NAME = "delivery-count"


def check(history: Any) -> Result:
    return property_result(NAME, history)
