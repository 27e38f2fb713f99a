"""The one registry of checkers: property name -> check function, in report order.

Each property's checker is a view of the one model replay (`harness.checkers.replay`, which calls the
property's judges as it goes): `property_result`. A new property is a judge module (NAME and its
judges) listed here and its name added to `findings.PROPERTIES` (the replay's order); importing this
module asserts the two agree. The judges import neither this module nor the replay: the replay calls
them, never the other way round.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from harness.checkers import (Checker, Result, ack_results, batch_order, delivery_count, durable_state, exclusive,
                              no_loss, no_redelivery, observed_result)
from harness.checkers.findings import PROPERTIES
from harness.checkers.replay import replay


def property_result(prop: str, history: Any) -> Result:
    """The Result for one property from the shared model replay (see `harness.checkers.replay`)."""
    return observed_result(prop, replay(history))


MODULES = (no_loss, delivery_count, batch_order, exclusive, no_redelivery, ack_results, durable_state)
CHECKERS: dict[str, Checker] = {m.NAME: partial(property_result, m.NAME) for m in MODULES}
#: the registry's own checker of each property (a test may put a stand-in into CHECKERS)
OWN: dict[str, Checker] = dict(CHECKERS)

assert tuple(CHECKERS) == PROPERTIES, "harness.checkers.findings.PROPERTIES must list the registry's checkers"
