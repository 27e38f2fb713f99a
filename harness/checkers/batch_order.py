"""Ordering within a batch: in one poll, the offsets of each share-partition
strictly increase (KIP-932: records of a share-partition in a batch are in
increasing offset order; redeliveries may be out of order across batches).
Anomaly: `batch-order`.
"""

from __future__ import annotations

from typing import Any

from harness.checkers import Result, property_result

NAME = "batch-order"


def check(history: Any) -> Result:
    return property_result(NAME, history)
