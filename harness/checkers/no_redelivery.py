"""No redelivery after acknowledgement: a record whose ACCEPT or REJECT commit
succeeded is never delivered again, unless an admin reset of the group's
offsets (`reset-offsets`) recorded in the history moved the start back over
it. There is no allowance: KIP-932 makes successful acknowledgements durable.
Anomaly: `redelivered-after-ack`.
"""

from __future__ import annotations

from typing import Any

from harness.checkers import Result, property_result
from harness.checkers.findings import ANOMALY_CAP

NAME = "no-redelivery-after-ack"


def check(history: Any) -> Result:
    return property_result(NAME, history)


class AfterTerminal:
    """A record the history proves accepted or rejected is delivered again (or its count restarts). On a
    release whose share coordinator may move a start offset back (`state-start-offset-regressed`), the
    state topic read after the drain decides whether that bug explains it (`resolve`); else an anomaly."""

    def __init__(self, findings, profile, ledger, state_topic) -> None:
        self.findings, self.profile, self.ledger, self.state_topic = findings, profile, ledger, state_topic
        #: (tp, offset, property, kind, message, evidence), decided after the state read
        self.pending: list[tuple] = []

    def report(self, tp: tuple, offset: int, prop: str, kind: str, message: str, evidence: tuple[int, ...]) -> None:
        if self.profile.ever("state-start-offset-regressed") and tp not in self.ledger.reset_tps \
                and len(self.pending) < ANOMALY_CAP:
            self.pending.append((tp, offset, prop, kind, message, evidence))
        else:
            self.findings.anomaly(prop, kind, message, evidence, offset=offset)

    def redelivered(self, tp: tuple, offset: int, process: str, evidence: tuple[int, ...], how: str = "") -> None:
        self.report(tp, offset, NAME, "redelivered-after-ack",
                    f"{tp[0]}-{tp[1]}@{offset} delivered to {process} after its {how or 'acknowledgement'} was "
                    f"committed", evidence)

    def resolve(self) -> None:
        for tp, o, prop, kind, message, evidence in self.pending:
            how = self.state_topic.start_went_back_over(tp, o)
            if how is None:
                self.findings.anomaly(prop, kind, message, evidence, offset=o)
                continue
            excused = self.state_topic.regression_excused(tp, o)
            if excused is None:
                self.findings.obs.unknown.setdefault(prop, self.state_topic.regression_unknown(tp))
                continue
            if not excused:  # the start went back in a phase whose releases do not have the bug
                self.findings.anomaly(prop, kind, f"{message}; in __share_group_state the {how}, written while "
                                      f"no release with that known bug ran", evidence, offset=o)
                continue
            # a known bug of this release (of the phase that wrote it)
            self.findings.allow("durable-state", "state-start-offset-regressed",
                                (*evidence, self.state_topic.final_state[tp][2]))
            self.findings.known_bug(f"{message}; in __share_group_state the {how}: {tp[0]}-{tp[1]}@{o} lost its "
                                    f"state")
