"""Consumer faults: a driver process killed mid-batch, paused past its acquisition lock, or closed
with records in flight. Healing a killed or closed consumer starts a replacement (a new process
with a new name, as in Jepsen), so the run keeps its number of consumers. `consumer-join` is
membership churn: a new consumer joins the group, and leaves (closes cleanly) at the heal.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass

from harness.clients.behaviours import commits_async, explicit
from harness.faults.base import FaultContext, NotApplied, Plan, choose, wait_effect
from harness.sys.wait import WaitTimeout, wait_until

IN_FLIGHT_WAIT = 5.0  # how long to wait for the consumer to hold a batch before acting anyway


def in_flight(ctx: FaultContext, process: str) -> int:
    """Records the process's last poll delivered that no successful commit covered yet (0: none)."""
    last_poll = None
    for op in reversed(ctx.history.ops()):
        if op.process != process:
            continue
        if op.f == "commit" and op.type in ("ok", "fail", "info"):
            return 0
        if op.f == "poll" and op.type == "ok":
            last_poll = op
            break
    return len(last_poll.value["records"]) if last_poll is not None else 0


def pending_async(ctx: FaultContext, process: str) -> int:
    """Records the process acknowledged in its last commit, when that commit is a commitAsync (its invoke
    says `{"async": true}`) and no callback has arrived since (still pending; 0: none)."""
    invoked = False
    for op in reversed(ctx.history.ops()):
        if op.process != process:
            continue
        if op.f == "callback" or (op.f == "commit" and op.type != "invoke") or op.f in ("close", "crash"):
            return 0
        if op.f == "commit":
            if not (isinstance(op.value, dict) and op.value.get("async") is True):
                return 0  # a commitSync under way: not what this waits for
            invoked = True
        elif op.f == "acknowledge" and op.type == "ok":
            return len(op.value["records"]) if invoked else 0
    return 0


def wait_for_moment(condition, what: str):
    """The moment `condition` holds, waited for up to `IN_FLIGHT_WAIT`: its value then, 0 if it never came
    (the fault acts anyway, and its evidence says which it was)."""
    try:
        return wait_until(condition, timeout=IN_FLIGHT_WAIT, what=what, interval=0.005)
    except WaitTimeout:
        return 0


def _driver(ctx: FaultContext, plan: Plan):
    for driver in ctx.consumers.live():
        if driver.name == plan.targets[0]:
            return driver
    raise NotApplied(f"consumer {plan.targets[0]} is not running")


@dataclass(frozen=True)
class ConsumerFault:
    """`kill` (SIGKILL mid-batch), `pause` (SIGSTOP past the lock), `close` (close holding records) or
    `join` (a consumer joins, and leaves cleanly at the heal)."""

    action: str
    group: str = "consumer"
    needs: tuple[type, ...] = ()
    exclusive: bool = False
    takes_node: bool = False
    effects: tuple[str, ...] = ()  # crash and close are in the history themselves

    @property
    def name(self) -> str:
        return {"kill": "consumer-kill", "pause": "consumer-pause", "close": "consumer-close",
                "join": "consumer-join"}[self.action]

    def plan(self, ctx: FaultContext, pick: int) -> Plan:
        if ctx.consumers is None:
            raise NotApplied("no consumers in this run")
        if self.action == "join":
            return Plan(["new consumer"], ctx.topic, None)
        if self.action == "close" and not explicit(ctx.consumers.behaviour):
            raise NotApplied("closing with records in flight needs explicit acknowledgement "
                             f"(behaviour {ctx.consumers.behaviour} acknowledges them implicitly on close)")
        driver = choose(sorted(ctx.consumers.live(), key=lambda d: d.name), pick, "live consumer")
        return Plan([driver.name], ctx.topic, None, processes=[driver.name])

    def apply(self, ctx: FaultContext, plan: Plan) -> str:
        if self.action == "join":
            joined = ctx.consumers.join()
            plan.state["joined"] = joined.name
            plan.processes.append(joined.name)
            return f"{joined.name} joined the group (started, subscribed)"
        driver = _driver(ctx, plan)
        if self.action == "close":
            return self._close(ctx, driver)
        if commits_async(ctx.consumers.behaviour):  # the moment an asynchronous commit is pending
            held = wait_for_moment(lambda: pending_async(ctx, driver.name), f"{driver.name} to have a commit pending")
            where = (f"with an asynchronous commit pending ({held} record{'s' if held != 1 else ''} acknowledged, "
                     "no result yet)" if held
                     else "with no asynchronous commit pending")
        else:
            held = wait_for_moment(lambda: in_flight(ctx, driver.name), f"{driver.name} to hold a batch")
            where = f"mid-batch ({held} records polled, not committed)" if held else "between batches"
        if self.action == "kill":
            driver.crash()
            if driver.alive():
                raise NotApplied(f"{driver.name} still runs after SIGKILL")
            return f"SIGKILL {driver.name} {where}; process gone"
        driver.proc.signal(signal.SIGSTOP)
        wait_effect(lambda: driver.proc.state() == "T", 10, f"{driver.name} to be stopped")
        plan.state["paused_at"] = time.monotonic()
        return f"SIGSTOP {driver.name} {where}; process state T (stopped)"

    def _close(self, ctx: FaultContext, driver) -> str:
        driver.send("abandon")
        wait_effect(lambda: not driver.alive(), ctx.timeout, f"{driver.name} to close holding records")
        closes = [op for op in ctx.history.ops() if op.process == driver.name and op.f == "close" and op.type != "invoke"]
        held = in_flight(ctx, driver.name)
        if not held:
            raise NotApplied(f"{driver.name} closed without records in flight")
        return f"{driver.name} closed ({closes[-1].type if closes else 'no close result'}) holding {held} records"

    def heal(self, ctx: FaultContext, plan: Plan) -> str:
        if self.action == "join":
            name = plan.state.get("joined")
            if name is None:
                return "no consumer joined; nothing to leave"
            result = ctx.consumers.close_one(name)
            return f"{name} left the group (close {result})"
        driver = _driver_any(ctx, plan)
        if self.action == "pause":
            lock_s = ctx.config.get("lock_duration_ms", 30000) / 1000 + ctx.config.get("lock_tolerance_ms", 2000) / 1000
            paused_at = plan.state.get("paused_at")
            if paused_at is not None:  # "past the acquisition lock": its deadline is the condition
                wait_until(lambda: time.monotonic() - paused_at >= lock_s, timeout=lock_s + 5,
                           what=f"{driver.name}'s acquisition locks to expire", interval=0.2)
            driver.proc.signal(signal.SIGCONT)
            wait_effect(lambda: driver.proc.state() not in ("T", None), 10, f"{driver.name} to run again")
            return f"SIGCONT {driver.name}; running again after {lock_s:.1f}s (the lock duration) or more"
        replacement = ctx.consumers.replace(driver)  # SIGKILLs it first if it still runs (a close that did not finish)
        return f"replacement {replacement.name} started for {plan.targets[0]}"


def _driver_any(ctx: FaultContext, plan: Plan):
    """The target driver, running or not (heal must work after a kill)."""
    for driver in ctx.consumers.all():
        if driver.name == plan.targets[0]:
            return driver
    raise NotApplied(f"consumer {plan.targets[0]} is unknown")
