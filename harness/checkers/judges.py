"""The judges, one line per property, in report order: the list everything else derives from (the properties'
names `PROPERTIES`, the checkers `harness.checkers.registry.CHECKERS`, the stats and unknowns of a verdict, the
Spark engine's merge). A new property is a module with its `Judge` class (`harness.checkers.judge`) and its line
here."""

from __future__ import annotations

from harness.checkers.ack_results import AckResults
from harness.checkers.batch_order import BatchOrder
from harness.checkers.delivery_count import DeliveryCount
from harness.checkers.durable_state import DurableState
from harness.checkers.exclusive import Exclusive
from harness.checkers.judge import Judge
from harness.checkers.no_loss import NoLoss
from harness.checkers.no_redelivery import NoRedelivery

JUDGES: tuple[type[Judge], ...] = (
    NoLoss,
    DeliveryCount,
    BatchOrder,
    Exclusive,
    NoRedelivery,
    AckResults,
    DurableState,
)

PROPERTIES: tuple[str, ...] = tuple(judge.NAME for judge in JUDGES)
