"""Durable state agrees with the model. For each read of the group's start
offsets (`share-offsets`, via the Admin API): the start offset is not behind
a prefix of records whose ACCEPT/REJECT commits all succeeded before the read
(recorded in stats as `start_offset_behind_acknowledged`: Kafka 4.3.1 persists the start offset from before the acknowledgements a write carries, so the summary lags until the next write; not a loss),
and it is not past a record that was never acknowledged and is below the
delivery limit (`durable-state-ahead`: that record would be skipped, lost).
"""

from __future__ import annotations

from typing import Any

from harness.checkers import Result, property_result

NAME = "durable-state"


def check(history: Any) -> Result:
    return property_result(NAME, history)
