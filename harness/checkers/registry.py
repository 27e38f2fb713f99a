"""The one registry of checkers: property name -> check function, in report order, one for each judge of
`harness.checkers.judges.JUDGES` (the list a new property is added to).

Each property's checker is a view of the one model replay (`harness.checkers.replay`, which runs the
judges as it goes): `property_result`. The judges import neither this module nor the replay: the replay
runs them, never the other way round.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from harness.checkers import Checker, Result, observed_result
from harness.checkers.judges import JUDGES, PROPERTIES  # noqa: F401  (re-exported: the list of judges)
from harness.checkers.replay import replay


def property_result(prop: str, history: Any) -> Result:
    """The Result for one property from the shared model replay (see `harness.checkers.replay`)."""
    return observed_result(prop, replay(history))


CHECKERS: dict[str, Checker] = {judge.NAME: partial(property_result, judge.NAME) for judge in JUDGES}
#: the registry's own checker of each property (a test may put a stand-in into CHECKERS)
OWN: dict[str, Checker] = dict(CHECKERS)
