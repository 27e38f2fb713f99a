"""No redelivery after acknowledgement: a record whose ACCEPT or REJECT commit
succeeded is never delivered again, unless an admin reset of the group's
offsets (`reset-offsets`) recorded in the history moved the start back over
it. There is no allowance: KIP-932 makes successful acknowledgements durable.
Anomaly: `redelivered-after-ack`.
"""

from __future__ import annotations

from typing import Any

from harness.checkers import Result, property_result

NAME = "no-redelivery-after-ack"


def check(history: Any) -> Result:
    return property_result(NAME, history)
