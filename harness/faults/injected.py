"""Faults an implementation injects into its own brokers on request (librdkafka's mock:
`harness.cluster.base.InjectedFaults`), where no process or link of it can be touched.

`share-fetch-drop` makes the mock close the connection that carries the next ShareFetch, as a broker
that drops a client's connection in the middle of a fetch (librdkafka's ERR__TRANSPORT injection,
`src/rdkafka_mock.c`: "Forcing close of connection"): the client must reconnect, its share session on
that broker is gone, and the records it held must still be settled once. The fault proves its effect by
the mock's own log line for the close. It is taken only by name.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.cluster.base import InjectedFaults
from harness.faults.base import FaultContext, NotApplied, Plan, wait_effect

#: ShareFetch's API key, and librdkafka's ERR__TRANSPORT: the mock closes the connection on it.
SHARE_FETCH, TRANSPORT = 78, -195


@dataclass(frozen=True)
class RequestDrop:
    """The next ShareFetch's connection closed by the implementation itself."""

    group: str = "partition"
    effects: tuple[str, ...] = ("session-loss",)
    exclusive: bool = False
    takes_node: bool = False
    by_name_only: bool = True
    name: str = "share-fetch-drop"

    @property
    def needs(self) -> tuple[type, ...]:
        return (InjectedFaults,)

    def plan(self, ctx: FaultContext, pick: int) -> Plan:
        return Plan(["mock"], ctx.topic, None, processes=[], state={"pick": pick})

    def apply(self, ctx: FaultContext, plan: Plan) -> str:
        cluster = ctx.cluster_as(InjectedFaults)
        before = cluster.injected_closes()
        cluster.push_request_errors(SHARE_FETCH, [TRANSPORT])
        try:
            wait_effect(lambda: cluster.injected_closes() > before, ctx.timeout,
                        "the mock to close the connection of the next ShareFetch")
        except NotApplied:
            cluster.clear_request_errors(SHARE_FETCH)  # never left to meet a later ShareFetch unrecorded
            raise
        return "the mock closed the connection that carried the next ShareFetch (its log: Forcing close of connection)"

    def heal(self, ctx: FaultContext, plan: Plan) -> str:
        ctx.cluster_as(InjectedFaults).clear_request_errors(SHARE_FETCH)  # (none left after an apply that held)
        return "nothing to undo: the injected error was answered once; the client reconnects by itself"
