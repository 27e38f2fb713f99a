"""The fault catalogue: every nemesis the harness can inject, by name and by option group (`harness.faults`
hands these names out).

`--faults` takes group names (`leader,coordinator,partition,truncate,latency,
consumer,restart`), single fault names (`leader-kill`), or `all`. `rolling-upgrade` is taken only
by name (the cluster stays upgraded: `harness.faults.upgrade`), and so are `leader-move` and
`leader-shuffle` (leaders moved with every broker up: an implementation's own hooks, `harness.faults.moves`), and
`share-fetch-drop` (a connection closed by librdkafka's mock itself, `harness.faults.injected`). Each fault
is a `harness.faults.base.Fault`; the nemesis (`nemesis.py`) runs a seeded
schedule (`schedule.py`) of them and records every step in the history.
"""

from __future__ import annotations

from harness.errors import HarnessError
from harness.faults.base import Fault
from harness.faults.bounce import Bounce, RollingRestart
from harness.faults.consumer import ConsumerFault
from harness.faults.disk import DiskFailure
from harness.faults.injected import RequestDrop
from harness.faults.moves import LeaderMove
from harness.faults.network import Cut, Degrade, LaneLatency
from harness.faults.process import ColdRestart, CoordinatorLoss, LeaderFailover
from harness.faults.truncate import Truncation
from harness.faults.upgrade import RollingUpgrade

GROUPS = ("leader", "coordinator", "partition", "truncate", "latency", "consumer", "restart")

CATALOGUE: dict[str, Fault] = {f.name: f for f in (
    LeaderFailover("stop"), LeaderFailover("kill"), LeaderFailover("pause"),
    CoordinatorLoss("group"), CoordinatorLoss("share"), CoordinatorLoss("controller"),
    Cut("isolate"), Cut("split"), Cut("one-way"), Cut("consumer"), Cut("controller"),
    Truncation(unclean=False), Truncation(unclean=True),
    Degrade("latency"), Degrade("bandwidth"), Degrade("slow-close"), Degrade("reset-peer"), Degrade("slicer"),
    LaneLatency(),
    ConsumerFault("kill"), ConsumerFault("pause"), ConsumerFault("close"), ConsumerFault("join"),
    ColdRestart(), RollingRestart("stop"), RollingRestart("kill"),
    Bounce("kill"), Bounce("stop"), DiskFailure("data"), DiskFailure("state"),
    RollingUpgrade(), LeaderMove("move"), LeaderMove("shuffle"), RequestDrop(),
)}


def in_group(group: str) -> list[str]:
    return [name for name, fault in CATALOGUE.items() if fault.group == group]


def by_name_only(name: str) -> bool:
    """A fault `all` and its group never draw (a rolling upgrade: the cluster stays upgraded)."""
    return getattr(CATALOGUE[name], "by_name_only", False)


def parse_faults(text: str | None) -> tuple[str, ...]:
    """`leader,partition` -> the fault names they enable, in catalogue order; a bad name is a HarnessError
    naming every valid one. Empty or `none`: no faults."""
    if text is None or text.strip() in ("", "none"):
        return ()
    chosen: set[str] = set()
    for word in (w.strip() for w in text.split(",")):
        if word == "all":
            chosen |= {name for name in CATALOGUE if not by_name_only(name)}
        elif word in GROUPS:
            chosen |= {name for name in in_group(word) if not by_name_only(name)}
        elif word in CATALOGUE:
            chosen.add(word)
        else:
            raise HarnessError(f"invalid fault {word!r}: use groups {', '.join(GROUPS)}, 'all', or fault names "
                               f"{', '.join(CATALOGUE)}")
    return tuple(name for name in CATALOGUE if name in chosen)
