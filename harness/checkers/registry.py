"""The one registry of checkers: property name -> check function, in report order.

A new property is a checker module (NAME, `check`, its judge) listed here and its name added to
`findings.PROPERTIES` (the replay's order); importing this module asserts the two agree.
"""

from __future__ import annotations

from harness.checkers import (Checker, ack_results, batch_order, delivery_count, durable_state, exclusive, no_loss,
                              no_redelivery)
from harness.checkers.findings import PROPERTIES

MODULES = (no_loss, delivery_count, batch_order, exclusive, no_redelivery, ack_results, durable_state)
CHECKERS: dict[str, Checker] = {m.NAME: m.check for m in MODULES}

assert tuple(CHECKERS) == PROPERTIES, "harness.checkers.findings.PROPERTIES must list the registry's checkers"
