"""Running one schedule on a real cluster: a fresh topic and share group, the steps in order, a drain, the
oracle.

The run is a conformance session (`harness.conformance.ShareSession`: the run context, its history, the
producer, step consumers of the client under test, the Admin operations) on the exploration's cluster,
with a nemesis (`harness.faults.nemesis`) for the fault steps. Each step either acts or is skipped
because its target is not there (a consumer slot that left, a fault to heal that never took effect, a
poll in explicit mode with records still unacknowledged); both are written to the run's `steps.jsonl`
with the faults in place at that moment (the coverage). A step whose result is definite is checked on
the spot (`StepCheck`); everything else is the oracle's, after the tail: every fault healed, every
consumer closed, a fresh consumer drains what is left, the durable read, all checkers.
"""

from __future__ import annotations

import json
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.conformance.session import ShareSession
from harness.errors import HarnessError
from harness.explore.schedule import Schedule, Step
from harness.explore.surface import MAX_PARTITIONS, OPS
from harness.explore.triage import RunFinding, StepCheck, assess
from harness.faults.base import FaultContext
from harness.spec import RunSpec
from harness.sys.wait import WaitTimeout, wait_until

POLL_S = 3.0
#: the sentence a poll in record_limit acquire mode is held to
RECORD_LIMIT = ("ConsumerConfig share.acquire.mode (KIP-1206; kafka-clients 4.3.1): \"If set to record_limit, the "
                "number of records returned in each poll() will not exceed the value of max.poll.records.\"")


@dataclass
class StepLog:
    index: int
    op: str
    status: str  # ok | skipped | error
    detail: str
    faults: tuple[str, ...]  # catalogue faults in place when the step ran
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "op": self.op, "status": self.status, "detail": self.detail,
                "faults": list(self.faults), "seconds": round(self.seconds, 3)}


@dataclass
class RunRecord:
    """A schedule as it ran: its run directory, steps, finding and what triage needs."""

    schedule: Schedule
    run_dir: Path
    steps: list[StepLog]
    finding: RunFinding
    seconds: float
    version: str
    ops: list = field(default_factory=list, repr=False)

    @property
    def skipped(self) -> list[int]:
        return [s.index for s in self.steps if s.status == "skipped"]

    def pairs(self) -> list[tuple[str, str]]:
        """(op kind, fault kind in place or "none") of each step that acted: the coverage."""
        out = []
        for s in self.steps:
            if s.status == "ok":
                out += [(s.op, f) for f in s.faults] or [(s.op, "none")]
        return out


def run_spec(base: RunSpec, schedule: Schedule, name: str) -> RunSpec:
    """The spec of one run of `schedule`: the exploration's cluster settings, the schedule's group."""
    s = schedule.setup
    return replace(base, name=name, seed=schedule.seed, topic_partitions=s.partitions, consumers=1,
                   lock_duration_ms=s.lock_duration_ms, delivery_count_limit=s.delivery_count_limit,
                   group_configs={**base.group_configs, **s.group_configs()}, max_poll_records=s.max_poll_records,
                   dead_letter=s.dead_letter)


class _Steps:
    """One run's live state while its steps act."""

    def __init__(self, session, nemesis, lock_ms: int, tolerance_ms: int, reset: str = "earliest",
                 record_limit: int | None = None) -> None:
        self.s = session
        self.reset = reset  # the group's share.auto.offset.reset
        #: max.poll.records when the consumers acquire in record_limit mode (no poll may return more)
        self.record_limit = record_limit
        self.nemesis = nemesis
        self.slots: list = []  # StepConsumer or None (left)
        self.held: list[list] = []
        self.polled: list[bool] = []
        self.last_acquired: list[float] = []
        self.partitions = session.spec.topic_partitions
        self.active: list = []  # FaultRecords in place
        self.checks: list[StepCheck] = []
        #: why the run cannot be decided (a step whose effect could not be read back)
        self.uncertain: list[str] = []
        #: (partition, log start before, what raised) of deleteRecords whose outcome is read after the heal
        self.deferred: list[tuple[int, int, str]] = []
        self.lock_s = lock_ms / 1000
        self.tolerance_s = tolerance_ms / 1000

    def live(self) -> list[int]:
        return [i for i, c in enumerate(self.slots) if c is not None and c.driver.alive()]

    def consumer(self, slot: int):
        if slot >= len(self.slots) or self.slots[slot] is None:
            raise _Skip(f"consumer slot {slot} has no consumer")
        c = self.slots[slot]
        if not c.driver.alive():
            self.slots[slot] = None
            raise _Skip(f"consumer slot {slot}'s process is not running")
        return c

    def warm_up(self, timeout: float = 60.0) -> str:
        """Under latest (or by_duration): until each partition's share-partition has delivered a record, write a
        sentinel record to the partitions that have not and let a consumer of its own (no slot) accept what comes.
        A share-partition is initialized at its first share fetch, which no history shows, so the oracle cannot
        judge records written before it (`no_loss.before_latest_start`: unknown); after the warm-up every record
        of the schedule comes after that moment, and the run can be decided. Partitions added later start at 0
        (KIP-932) and are not warmed. The sentinels are ordinary records of the history; those a share-partition
        began past (written before its first fetch) are then deleted (deleteRecords below the first one delivered),
        so none of them is left for the oracle to place."""
        import time as clock
        c = self.s.consumer("explicit")
        first: dict[int, int] = {}  # partition -> lowest offset delivered
        deadline = clock.monotonic() + timeout
        try:
            while len(first) < self.partitions and clock.monotonic() < deadline:
                for p in range(self.partitions):
                    if p not in first:
                        self.s.produce(1, partition=p)
                got = c.poll(POLL_S)
                if got:
                    c.ack(got, "ACCEPT")
                    for r in got:
                        first[r.partition] = min(first.get(r.partition, r.offset), r.offset)
            c.commit_sync()
        finally:  # never left in the group (it would hold sentinels and keep the group from being empty)
            c.close()
        for p, offset in sorted(first.items()):
            if offset > 0:
                self.s.delete_records(p, offset)
        seen = set(first)
        if len(seen) < self.partitions:
            self.uncertain.append(f"the warm-up saw only partitions {sorted(seen)} of {self.partitions} deliver within "
                                  f"{timeout:g} s: where the others were initialized is unknown")
        return f"warm-up: partitions {sorted(seen)} initialized"

    # -- the ops ---------------------------------------------------------------------------------
    def produce(self, count: int, partition: int | None) -> str:
        if partition is not None:
            self.s.produce(count, partition=partition % self.partitions)
            return f"{count} records to partition {partition % self.partitions}"
        for p in range(self.partitions):
            share = count // self.partitions + (1 if p < count % self.partitions else 0)
            if share:
                self.s.produce(share, partition=p)
        return f"{count} records over {self.partitions} partitions"

    def produce_txn(self, count: int, commit: bool, partition: int) -> str:
        p = partition % self.partitions
        self.s.produce_transaction(count, commit, partition=p)
        return f"{count} records in a transaction to partition {p}, {'committed' if commit else 'aborted'}"

    def join(self, mode: str) -> str:
        try:
            c = self.s.consumer(mode, **({"share_acquire_mode": "record_limit"} if self.record_limit else {}))
        except HarnessError as exc:  # a consumer that cannot start (a fault in place): the slot stays empty
            self._add(None)
            raise _Skip(f"the consumer did not start: {str(exc).splitlines()[0]}") from None
        self._add(c)
        return f"{c.name} joined ({mode}) as slot {len(self.slots) - 1}"

    def _add(self, c) -> None:
        self.slots.append(c)
        self.held.append([])
        self.polled.append(False)
        self.last_acquired.append(0.0)

    def poll(self, slot: int, step: int = 0) -> str:
        c = self.consumer(slot)
        if c.mode == "explicit" and self.held[slot]:
            raise _Skip(f"slot {slot} holds {len(self.held[slot])} unacknowledged records (explicit mode: no poll)")
        got = c.poll(POLL_S)
        if self.record_limit and len(got) > self.record_limit:
            self.checks.append(StepCheck(
                "record-limit-exceeded", step, f"a poll of {c.name} in record_limit acquire mode returned {len(got)} "
                f"records with max.poll.records {self.record_limit}", RECORD_LIMIT))
        self.polled[slot] = True
        self.held[slot] = list(got) if c.mode == "explicit" else []
        if got:
            self.last_acquired[slot] = time.monotonic()
        return f"{c.name} got {len(got)} records" + (f" (error {c.last_error})" if c.last_error else "")

    def ack(self, slot: int, type_: str, count: int) -> str:
        c = self.consumer(slot)
        if c.mode != "explicit" or not self.held[slot]:
            raise _Skip(f"slot {slot} holds no records to acknowledge")
        chosen = self.held[slot] if count == 0 else self.held[slot][:count]
        error = c.ack(chosen, type_)
        if type_ == "RENEW":
            self.last_acquired[slot] = time.monotonic()
        # a renewed record is acknowledged again once a poll has returned it again (KafkaShareConsumer Javadoc,
        # renewal: "When a record is renewed successfully, it is returned again by the poll(Duration) call"); before
        # that, a second acknowledgement replaces the RENEW in the client (kafka-clients 4.3: the last one goes out)
        self.held[slot] = [r for r in self.held[slot] if r not in chosen]
        return f"{c.name} {type_} {len(chosen)} records" + (f": {error}" if error else "")

    def commit(self, slot: int, how: str) -> str:
        c = self.consumer(slot)
        if how == "async":
            c.commit_async()
            return f"{c.name} commitAsync"
        try:
            results = c.commit_sync()
        except HarnessError as exc:  # the client raised: its own outcome, recorded in the history
            return f"{c.name} commitSync raised: {str(exc).splitlines()[0]}"
        errors = [r for r in results if r.get("error")]
        return f"{c.name} commitSync: {len(results)} results" + (f", errors {errors}" if errors else "")

    def close(self, slot: int) -> str:
        c = self.consumer(slot)
        c.close()
        self.slots[slot] = None
        return f"{c.name} closed"

    def crash(self, slot: int) -> str:
        c = self.consumer(slot)
        c.driver.crash()
        self.slots[slot] = None
        return f"{c.name} killed (SIGKILL)"

    def hold_past_lock(self, slot: int) -> str:
        c = self.consumer(slot)
        if not self.held[slot]:
            raise _Skip(f"slot {slot} holds no records")
        # the operation is the wait itself: until the acquisition lock of what the slot holds has run out
        until = self.last_acquired[slot] + self.lock_s + self.tolerance_s
        time.sleep(max(0.0, until - time.monotonic()))
        return f"{c.name} held {len(self.held[slot])} records past their {self.lock_s:g} s lock"

    def _ends(self, partition: int) -> tuple[int, int]:
        """(log start, end) of `partition` as the history shows it (produced offsets, records deleted)."""
        return self.s.log_ends().get(partition, (0, 0))

    def members(self) -> list[str]:
        """The consumers that are surely members now: running, not asked to close, and polled once."""
        return [self.slots[i].name for i in self.live() if self.polled[i] and not self.slots[i].close_sent]

    def alter_offsets(self, partition: int, to: str, step: int) -> str:
        p = partition % self.partitions
        low, end = self._ends(p)
        offset = {"earliest": low, "latest": end, "middle": (low + end) // 2}[to]
        before = self._described_members() if self.members() else []
        result = self.s.alter_offset(p, offset)
        if "error" in result:
            return f"alter offsets of partition {p} to {offset} refused: {result.get('error')} {result.get('message', '')}"
        # checked only where the group surely had members throughout: the coordinator listed them before and after
        # (a consumer that is running may have left the group: its session timed out under a fault)
        members = [m for m in before if m in self._described_members()] if before else []
        if members:
            self.checks.append(StepCheck(
                "alter-offsets-non-empty-accepted", step,
                f"altering the group's start offset of partition {p} to {offset} succeeded while the coordinator "
                f"described {len(members)} member(s) before and after it", OPS["alter-offsets"].sentence))
        return f"alter offsets of partition {p} to {offset} ({to}) accepted"

    def _described_members(self) -> list[str]:
        """The group's members as its coordinator describes them now ([] if the describe failed)."""
        try:
            found = self.s.describe().get("members")
        except HarnessError:
            return []
        return [str(m.get("member")) for m in found if isinstance(m, dict)] if isinstance(found, list) else []

    def delete_offsets(self) -> str:
        reset = self.reset
        result = self.s.delete_offsets("latest" if reset == "latest" else "earliest", self.partitions)
        if "error" in result:
            return f"delete offsets refused: {result.get('error')} {result.get('message', '')}"
        if reset == "latest":  # each share-partition starts again at a fetch no history shows: warm up again
            try:
                return f"delete offsets accepted; {self.warm_up()}"
            except Exception as exc:  # noqa: BLE001 - where the share-partitions start again is not known then
                self.uncertain.append(f"the warm-up after deleting the group's offsets under latest failed "
                                      f"({type(exc).__name__}): where its share-partitions start again is unknown")
                raise
        return "delete offsets accepted"

    def delete_records(self, partition: int, fraction: float) -> str:
        p = partition % self.partitions
        low, end = self._ends(p)
        before = int(end * fraction)
        if before <= low:
            raise _Skip(f"partition {p} has nothing to delete below {before}")
        try:
            new_low = self.s.delete_records(p, before)
        except Exception as exc:  # noqa: BLE001 - a timeout under a fault: whether it took effect is read back
            return self._deletion_read_back(p, low, before, exc)
        return f"records of partition {p} deleted below {before} (log start {new_low})"

    def _deletion_read_back(self, p: int, low: int, before: int, exc: Exception) -> str:
        """deleteRecords raised (a timeout under a fault): read the log start back and record the deletion if
        it moved, so the oracle does not take records it removed for lost. Under a fault that keeps it unreadable
        (its leader cut off) it is read after the tail's heal (`read_back_deferred`); one that cannot be read even
        then makes the run undecided (`uncertain`)."""
        now = self._log_start(p, timeout=20 if self.active else 90)
        what = f"deleteRecords below {before} on partition {p} raised {type(exc).__name__}"
        if now is None and self.active:
            self.deferred.append((p, low, what))
            raise HarnessError(f"{what}; its log start is read back after every fault is healed")
        self._deleted_to(p, low, now, what)
        raise HarnessError(f"{what}: {str(exc).splitlines()[0][:120]}; the log start read back is {now}")

    def read_back_deferred(self) -> None:
        """The log starts a deleteRecords under a fault left unread, read now that every fault is healed."""
        for p, low, what in self.deferred:
            self._deleted_to(p, low, self._log_start(p, timeout=90), what)
        self.deferred.clear()

    def _deleted_to(self, p: int, low: int, now: int | None, what: str) -> None:
        if now is None:
            self.uncertain.append(f"{what} and its log start could not be read back: whether records were deleted "
                                  "is unknown")
        elif now > low:
            self.s.history.append("admin", "ok", "records-deleted", {"topic": self.s.topic, "partition": p,
                                                                     "offset": now})

    def _log_start(self, p: int, timeout: float) -> int | None:
        """The log start offset of partition `p` (Admin listOffsets earliest), None if unreadable for `timeout` s."""
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec

        from harness.cluster.inspect import ClusterInspector  # (deferred: loads confluent_kafka)
        admin = ClusterInspector(self.s.cluster.bootstrap_servers).admin
        tp = TopicPartition(self.s.topic, p)

        def start() -> tuple[int] | None:  # (a tuple: a log start of 0 is an answer too)
            try:
                return (admin.list_offsets({tp: OffsetSpec.earliest()})[tp].result(10).offset,)
            except Exception:  # noqa: BLE001 - not readable yet (the fault's heal brings it back)
                return None
        try:
            return wait_until(start, timeout=timeout, interval=1.0, what=f"the log start of {self.s.topic}-{p}")[0]
        except WaitTimeout:
            return None

    def add_partitions(self, add: int) -> str:
        total = min(MAX_PARTITIONS, self.partitions + add)
        if total <= self.partitions:
            raise _Skip(f"the topic has {self.partitions} partitions already")
        try:
            self.s.add_partitions(total)
        except Exception as exc:  # noqa: BLE001 - a timeout under a fault: how many there are now is read back
            self._growth_read_back(exc)
            raise HarnessError(f"createPartitions to {total} raised {type(exc).__name__}: "
                               f"{str(exc).splitlines()[0][:120]}; the topic has {self.partitions} now") from None
        before, self.partitions = self.partitions, total
        return f"partitions {before} -> {total}"

    def _growth_read_back(self, exc: Exception) -> None:
        """createPartitions raised: read the partition count back (recording a growth that happened)."""
        from harness.cluster.inspect import ClusterInspector  # (deferred: loads confluent_kafka)
        inspector = ClusterInspector(self.s.cluster.bootstrap_servers)
        try:
            count = wait_until(lambda: len(inspector.partitions(self.s.topic)) or None, timeout=90, interval=1.0,
                               what=f"the partition count of {self.s.topic}")
        except WaitTimeout:
            self.uncertain.append(f"createPartitions raised {type(exc).__name__} and the partition count could not "
                                  "be read back")
            return
        if count > self.partitions:
            self.s.partitions_grew(self.partitions, count)
            self.partitions = count

    def fault(self, name: str, pick: int) -> str:
        from harness.faults import CATALOGUE  # (deferred: loads confluent_kafka)
        if self.active and (CATALOGUE[name].exclusive or CATALOGUE[name].takes_node or
                            any(CATALOGUE[r.fault].exclusive or CATALOGUE[r.fault].takes_node for r in self.active)):
            raise _Skip(f"{name} cannot run beside {', '.join(r.fault for r in self.active)}")
        record = self.nemesis.start(name, pick)
        if not record.applied:
            raise _Skip(f"{name} not applied: {record.reason}")
        self.active.append(record)
        return f"{name}: {record.evidence}"

    def heal(self) -> str:
        if not self.active:
            raise _Skip("no fault in place")
        record = self.active.pop(0)
        self.nemesis.heal(record)
        if not record.healed_ok:
            raise HarnessError(f"{record.fault} did not heal: {record.reason}")
        return f"{record.fault} healed: {record.heal_evidence}"


class _Skip(Exception):
    """The step's target is not there: nothing was done."""


def execute(schedule: Schedule, cluster, base: RunSpec, run_dir: Path, name: str = "explore") -> RunRecord:
    """Run `schedule` on `cluster` (a fresh topic and group) and check it; the record of the run."""
    from harness.faults.nemesis import Nemesis  # (deferred: loads confluent_kafka)
    started = time.monotonic()
    spec = run_spec(base, schedule, name)
    session = ShareSession(cluster, spec, run_dir)
    schedule.save(run_dir / "schedule.json")
    nemesis = Nemesis(FaultContext(cluster, session.history, session.topic, session.group,
                                   config=dict(session.limits)))
    setup = schedule.setup
    live = _Steps(session, nemesis, session.limits.get("lock_duration_ms", spec.lock_duration_ms or 30000),
                  spec.lock_tolerance_ms, setup.auto_offset_reset,
                  setup.max_poll_records if setup.acquire_mode == "record_limit" else None)
    if setup.compression != "none":
        session.producer_config["compression.type"] = setup.compression
    logs: list[StepLog] = []
    harness_errors: list[str] = []
    finished = False
    try:
        with (run_dir / "steps.jsonl").open("w") as out:
            if schedule.setup.auto_offset_reset != "earliest":
                out.write(json.dumps({"warm_up": live.warm_up()}) + "\n")
            for i, step in enumerate(schedule.steps):
                log = _one(live, i, step)
                if log.status == "harness":
                    harness_errors.append(log.detail)
                    log.status = "error"
                logs.append(log)
                out.write(json.dumps(log.to_json()) + "\n")
                out.flush()
            tail = _tail(live, nemesis)
            out.write(json.dumps({"tail": tail}) + "\n")
        session.finish()
        finished = True
    except HarnessError as exc:
        harness_errors.append(f"RunBrokeOff: {str(exc).splitlines()[0]}")
    finally:
        if not finished:
            _abandon(session, nemesis)
    results = session.results if finished else ()
    finding = assess(results, live.checks, harness_errors)
    if live.uncertain:  # a step whose effect is not known: nothing the oracle says of the run is decided
        finding.outcome = "unknown"
        finding.unknown += live.uncertain
    if not finished:
        finding.outcome = "fail" if finding.outcome == "fail" else "unknown"
    return RunRecord(schedule, run_dir, logs, finding, time.monotonic() - started,
                     session.ctx.version, list(session.history.ops()) if finished else [])


def _external() -> tuple[type, ...]:
    from concurrent.futures import TimeoutError as FutureTimeout

    from confluent_kafka import KafkaException
    return (KafkaException, FutureTimeout, TimeoutError, OSError)


_EXTERNAL = _external()


def _one(live: _Steps, i: int, step: Step) -> StepLog:
    t0 = time.monotonic()
    faults = tuple(r.fault for r in live.active)
    a = step.args
    try:
        detail = {
            "produce": lambda: live.produce(int(a.get("count", 1)), a.get("partition")),
            "produce-txn": lambda: live.produce_txn(int(a.get("count", 1)), bool(a.get("commit", True)),
                                                    int(a.get("partition", 0))),
            "join": lambda: live.join(str(a.get("mode", "explicit"))),
            "poll": lambda: live.poll(int(a.get("slot", 0)), i),
            "ack": lambda: live.ack(int(a.get("slot", 0)), str(a.get("type", "ACCEPT")), int(a.get("count", 0))),
            "commit": lambda: live.commit(int(a.get("slot", 0)), str(a.get("how", "sync"))),
            "close": lambda: live.close(int(a.get("slot", 0))),
            "crash": lambda: live.crash(int(a.get("slot", 0))),
            "hold-past-lock": lambda: live.hold_past_lock(int(a.get("slot", 0))),
            "alter-offsets": lambda: live.alter_offsets(int(a.get("partition", 0)), str(a.get("to", "earliest")), i),
            "delete-offsets": live.delete_offsets,
            "delete-records": lambda: live.delete_records(int(a.get("partition", 0)), float(a.get("fraction", 0.5))),
            "add-partitions": lambda: live.add_partitions(int(a.get("add", 1))),
            "fault": lambda: live.fault(str(a["name"]), int(a.get("pick", 0))),
            "heal": live.heal,
        }[step.op]()
        status = "ok"
    except _Skip as why:
        status, detail = "skipped", str(why)
    except HarnessError as exc:  # the client, the cluster or a fault said no: recorded, the run goes on
        status, detail = "error", str(exc).splitlines()[0]
    except _EXTERNAL as exc:  # a Kafka client call that failed or timed out (under a fault): not the harness's bug
        status, detail = "error", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    except Exception as exc:  # noqa: BLE001 - a bug of the harness: the finding names it
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        status, detail = "harness", f"{type(exc).__name__}: {exc} ({Path(frame.filename).name}:{frame.lineno})"
    return StepLog(i, step.op, status, detail, faults, time.monotonic() - t0)


def _tail(live: _Steps, nemesis) -> str:
    """Every fault healed, every consumer closed, then a fresh consumer drains what is left (ACCEPT) until
    the group settled every record or the drain's time is up."""
    nemesis.heal_all()
    live.active.clear()
    live.read_back_deferred()
    s = live.s
    for op in s.history.ops():  # a truncation writes which records it took at its heal: a failed one never did
        if op.f == "fault-heal" and op.type == "fail" and str(op.value.get("fault", "")).startswith("truncate"):
            live.uncertain.append(f"the heal of {op.value.get('id')} failed, so which records it truncated is not "
                                  f"known (a record at an offset the log reused would look lost or reused)")
    # records a produce step gave up on (a fault) may be written after the heal: before the drain, or no consumer
    # is left to deliver them (met on 4.4.0: written while the durable read ran, then judged lost)
    pending = s.settle_writes(90)
    if pending:
        live.uncertain.append(f"{pending} records still had no produce outcome 90 s after every fault healed")
    for i in live.live():
        live.slots[i].close()
    drain_s = max(30.0, 3 * live.lock_s + 10)
    c = s.consumer("explicit")
    got = c.poll_until(10 ** 9, timeout=drain_s, ack="ACCEPT", settled=s.all_settled)
    try:
        c.commit_sync()
    except HarnessError:
        pass  # its outcome is in the history; the oracle judges it
    return f"drained {len(got)} records"


def _abandon(session, nemesis) -> None:
    """A run that broke off: heal, close and keep what the history holds (no verdict)."""
    try:
        nemesis.heal_all()
    finally:
        for c in session.consumers:
            c.driver.close(10)
        session.ctx.close()
