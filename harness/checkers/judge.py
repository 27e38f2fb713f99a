"""The judge protocol: a property's judge takes the history's events and the replay's view, and gives the
property's findings, its stats and why it may be undecidable.

A judge is a class (`Judge`) listed once in `harness.checkers.judges.JUDGES`; the property's name, the sentence
it derives from, the events it reads and what its verdict reports are the class's:

- `NAME` (the property, as reports name it) and `SENTENCE` (KIP-932's or the client contract's words it checks);
- `EVENTS`: the event types (`f` of a history row: "poll", "acknowledge", "close", ...) whose rows the replay
  hands to `see`, each as an `Event`, in history order, after the replay itself handled the row (so the view is
  the state just after it);
- `end()`: after the last row, its final judgements;
- `stats(counts, config, found)` and `unknown(counts, config, found)`: the property's stats and the reason it is
  undecidable (None: decidable; by default what `NEEDS`, the event count it cannot do without, and
  `NEEDS_CONFIG` say), from the replay's merged event counts (`Findings.n`) and the history's config,
  given what the replay's parts already put there (`found`), so that replays of share-partitions merged on Spark
  give the whole history's.

A judge reports into `view.findings` (`anomaly`, `allow`, the counts `n`) and reads the view
(`harness.checkers.view.ReplayView`) and nothing else of the replay. Its Result is the registry's
`property_result` of its NAME, the same for every judge: anomalies mean False, an unknown reason "unknown",
otherwise True.

The seven properties the harness started with (no-loss ... durable-state) are judged by the replay's model at
fixed points of its hot loop (a delivery, a settled acknowledgement, a start-offset read, the end: their
modules' `judge_*` functions), because two of them steer what the ledger records (`exclusive.judge_delivery`,
`delivery_count.judge_delivery`) and the loop's cost is measured (benchmarks/checkers_throughput.py); their
classes declare no `EVENTS` and carry the rest of the protocol (name, sentence, stats, unknown). A new property
needs none of that: one module with its `Judge` class, one line in `JUDGES`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Mapping, NamedTuple

if TYPE_CHECKING:  # (annotations only)
    from harness.checkers.view import ReplayView


class Event(NamedTuple):
    """One history row as a judge sees it (`harness.history.events.COLUMNS`, in that order)."""

    index: int
    time: int
    process: str
    type: str
    f: str
    topic: str | None
    partition: int | None
    offset: int | None
    record_id: str | None
    delivery_count: int | None
    ack: str | None
    error: str | None
    member: str | None
    value: str | None


class Judge:
    """A property's judge (the protocol, with do-nothing defaults: a judge overrides what it needs)."""

    NAME: ClassVar[str] = ""
    SENTENCE: ClassVar[str] = ""
    EVENTS: ClassVar[frozenset[str]] = frozenset()
    #: (count, what): undecidable, "<what>: nothing to check", while the replay counted no `count` event
    NEEDS: ClassVar[tuple[str, str] | None] = None
    #: undecidable without the history's `config` operation (the limit and the lock in force are unknown then)
    NEEDS_CONFIG: ClassVar[bool] = False

    def __init__(self, view: "ReplayView") -> None:
        self.r = view

    def see(self, event: Event) -> None:
        """One row of an event type in `EVENTS`, after the replay handled it."""

    def end(self) -> None:
        """After the last row."""

    @staticmethod
    def stats(counts: Mapping[str, int], config: dict[str, Any], found: dict[str, Any]) -> dict[str, Any]:
        """The property's stats (what was checked, so an empty check is visible)."""
        return found

    @classmethod
    def unknown(cls, counts: Mapping[str, int], config: dict[str, Any], found: str | None) -> str | None:
        """Why the property cannot be decided (None: it can); `found`, the reason a replay recorded. By default
        what `NEEDS` and `NEEDS_CONFIG` say, else `found`."""
        if cls.NEEDS is not None and not counts[cls.NEEDS[0]]:
            return f"{cls.NEEDS[1]}: nothing to check"
        if cls.NEEDS_CONFIG and not config:
            return found or NO_CONFIG
        return found


NO_CONFIG = ("the history has no config operation (version 0): the delivery-count limit and lock duration in force "
             "are unknown")
#: what a judge of delivered records needs (`Judge.NEEDS`)
POLLS = ("batches", "no poll delivered records")
