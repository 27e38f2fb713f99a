"""Durable state agrees with the model. For each read of the group's start
offsets (`share-offsets`, via the Admin API): the start offset is not behind
a prefix of records whose ACCEPT/REJECT commits all succeeded before the read
(recorded in stats as `start_offset_behind_acknowledged`: Kafka 4.3.1 persists the start offset from before the acknowledgements a write carries, so the summary lags until the next write; not a loss),
and it is not past a record that was never acknowledged and is below the
delivery limit (`durable-state-ahead`: that record would be skipped, lost).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.checkers import no_loss
from harness.checkers.ledger import ACCEPTED
from harness.checkers.judge import Judge

if TYPE_CHECKING:
    from harness.checkers.view import ReplayView

NAME = "durable-state"


def judge_start_read(r: ReplayView, index: int, time: int, process: str, tp: tuple, start: int) -> None:
    """A read of the group's start offset of `tp` (Admin API) returned `start`."""
    r.start_read(index, time, tp, start)
    floor = r.offset_reads.get(process, {}).get(tp, 0)
    if start < floor:
        # Observed on 4.3.1: the start offset a write persists is the one from before the acknowledgements
        # it carries, so the summary lags until the next write. Not a loss (the acknowledged states are
        # written); recorded, and a redelivery of those records would fail no-redelivery-after-ack.
        lag = r.findings.obs.stats[NAME].setdefault("start_offset_behind_acknowledged", {})
        lag[f"{tp[0]}-{tp[1]}"] = floor - start
    excused = r.excused_reads  # (tp, offset) -> the allowance that excused it: counted once a record
    for o, rec in r.ledger.recs[tp].items():
        if o < start and rec.produce_index >= 0 and not rec.ack_seen and rec.status < ACCEPTED:
            # an excuse is an allowance, counted with its evidence (issue 46: never a silent pass)
            if rec.count >= r.limit and not r.session_released(rec):
                continue  # delivered at the limit: archived when its lock ends
            unseen = no_loss.archived_unseen(r, rec, time, index)
            if unseen is not None:
                if (tp, o) not in excused:
                    excused[(tp, o)] = unseen[0]
                    r.findings.allow(NAME, unseen[0], unseen[1])
                continue
            if no_loss.before_latest_start(r, tp, o, rec):
                if (tp, o) not in excused:
                    excused[(tp, o)] = "before-latest-start"
                    r.findings.allow(NAME, "before-latest-start", (rec.produce_index, r.evidence.first_start, index))
                continue
            cut = no_loss.skipped_after_unclean(r, tp, o, rec)
            if cut is not None:  # the state of that offset is the lost record's (an unclean election)
                r.findings.allow(NAME, "skipped-after-unclean-election", (rec.produce_index, cut, index))
                continue
            r.findings.anomaly(NAME, "durable-state-ahead",
                               f"share-group start offset of {tp[0]}-{tp[1]} read as {start}, past record {o} which "
                               f"was never acknowledged and is below the delivery limit (delivered {rec.count} "
                               f"times)", (rec.produce_index, index), start=start, offset=o)
            break


class DurableState(Judge):
    """Judged by the replay's model (`judge_start_read`; `__share_group_state` by `harness.checkers.state_topic`)."""

    NAME = NAME
    SENTENCE = ("KIP-932 \u00a7Share group state persistence: the share coordinator's durable state (the SPSO and "
                "the states of in-flight records) agrees with what was acknowledged")

    NEEDS = ("durable-reads", "the history holds no read of durable state (share-offsets)")

    @staticmethod
    def stats(n, config, found):
        return {"start_offset_reads": n["durable-reads"], **found}
