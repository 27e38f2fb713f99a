"""The surface the explorer draws from: every operation kind, the sentence that governs it, where it
is available, and the seeded generator of schedules.

Each `OpKind` is one row: its family (producer, admin, consumer, fault), the KIP-932 (or follow-up KIP,
or Admin/consumer Javadoc) sentence whose behaviour it exercises, and what it needs (a release line, a
driver feature, a cluster capability). `generate` draws a schedule from a `random.Random` seeded by the
run's seed, keeping a small abstract state (live consumer slots, partitions, faults in place) so the
steps it draws are ones that can act; steps that cannot act when they run are skipped by the runner.

Left out of this surface, and why (each is a row to add, not a design change):
- producer compression codecs, headers, null keys and values near `max.message.bytes`: the history
  producer writes plain records whose values are their ids (the oracle identifies records by them);
- reassigning partitions and electing preferred leaders by the Admin API: the fault catalogue moves
  leaders by taking brokers down (leader-*, bounce-*), and the heal elects the preferred leaders back;
- altering group configs while the group is live: the reference model reads the limits in force once
  (the `config` operation); a live change would need the model to follow it, so the setup draws them
  per run instead;
- deleting and recreating a topic of the same name, several groups on one topic, subscription
  changes and record-limit acquire mode: not yet driven by the step consumer.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Callable

from harness.explore.schedule import Schedule, Setup, Step

KIP = "KIP-932"


@dataclass(frozen=True)
class Env:
    """What a schedule may use: the release line, the driver's features, the backend."""

    line: str  # "4.3"
    features: tuple[str, ...]
    backend: str = "local"

    def at_least(self, line: str) -> bool:
        return tuple(map(int, self.line.split("."))) >= tuple(map(int, line.split(".")))


@dataclass(frozen=True)
class OpKind:
    name: str
    family: str
    sentence: str
    #: why the op is not available in `env` ("" when it is)
    missing: Callable[[Env], str] = lambda env: ""


def _feature(*names: str) -> Callable[[Env], str]:
    return lambda env: "" if all(n in env.features for n in names) else f"the driver lacks {', '.join(names)}"


def _line(line: str) -> Callable[[Env], str]:
    return lambda env: "" if env.at_least(line) else f"needs Kafka {line}+"


OPS: dict[str, OpKind] = {o.name: o for o in (
    OpKind("produce", "producer", f"{KIP}: a share group delivers every record of its subscribed topics at least "
           "once (records produced while the group consumes are in-flight candidates once written)"),
    OpKind("produce-txn", "producer", f"{KIP}: share.isolation.level read_committed delivers only committed "
           "transactional records; read_uncommitted delivers all records, aborted ones included"),
    OpKind("join", "consumer", f"{KIP}: a member joins the share group and is assigned share-partitions; several "
           "members may consume one partition", _feature("explicit")),
    OpKind("poll", "consumer", f"{KIP}: poll acquires available records for the consumer, each acquisition "
           "incrementing its delivery count"),
    OpKind("ack", "consumer", f"{KIP}: the consumer acknowledges each delivered record ACCEPT, RELEASE or REJECT "
           "(KIP-1222: RENEW extends the lock); ACCEPT and REJECT are final", _feature("explicit")),
    OpKind("commit", "consumer", f"{KIP}: commitSync/commitAsync send the acknowledgements and report each "
           "partition's result", _feature("commit_sync")),
    OpKind("close", "consumer", f"{KIP}: when a consumer closes, the records it had acquired are released"),
    OpKind("crash", "consumer", f"{KIP}: a record's acquisition lock ends when its time-out passes or the "
           "consumer's share session ends; the record becomes available again"),
    OpKind("hold-past-lock", "consumer", f"{KIP}: if a record is not acknowledged within the lock duration, its "
           "acquisition lock times out and it becomes available again (delivery count kept)"),
    OpKind("alter-offsets", "admin", "Admin.alterShareGroupOffsets: Alters offsets for the specified group. In "
           "order to succeed, the group must be empty."),
    OpKind("delete-offsets", "admin", "Admin.deleteShareGroupOffsets (KIP-932): deletes the group's offsets of a "
           "topic; the group must be empty, and its share-partitions start again by share.auto.offset.reset"),
    OpKind("delete-records", "admin", f"{KIP}: the SPSO of each share-partition is bounded by the log start offset "
           "of the topic-partition"),
    OpKind("add-partitions", "admin", f"{KIP}: share-partitions of partitions added to a subscribed topic start "
           "at offset 0, whatever share.auto.offset.reset says"),
    OpKind("fault", "fault", f"{KIP}: share-partition state is durable in __share_group_state and survives the "
           "loss of brokers, leaders and coordinators (at-least-once delivery, delivery counts kept)"),
    OpKind("heal", "fault", "the fault catalogue: every fault is undone and its recovery observed"),
)}

#: Catalogue faults the explorer draws on Apache Kafka's backends (local processes, containers). Left out:
#: the consumer faults (the explorer's own consumer ops do that, on its step consumers), the rolling and
#: cold restarts (a minute each: the nightly chaos suites run them), a rolling upgrade (the cluster stays
#: upgraded) and the kfake-only leader moves.
CLUSTER_FAULTS = ("leader-stop", "leader-kill", "leader-pause", "group-coordinator-kill", "share-coordinator-kill",
                  "controller-kill", "isolate-node", "one-way-cut", "controller-cut", "split", "latency",
                  "bandwidth", "slow-close", "reset-peer", "slicer", "bounce-kill", "bounce-stop", "disk-fail",
                  "disk-fail-state", "truncate", "truncate-unclean")
KFAKE_FAULTS = ("leader-move", "leader-shuffle")

#: Relative weights of the op kinds when each can act.
WEIGHTS = {"produce": 4, "produce-txn": 1, "join": 2, "poll": 5, "ack": 4, "commit": 2, "close": 1, "crash": 1,
           "hold-past-lock": 0.6, "alter-offsets": 0.6, "delete-offsets": 0.3, "delete-records": 0.6,
           "add-partitions": 0.5, "fault": 3, "heal": 1.2}
MAX_CONSUMERS = 3
#: the producer's compression.type values (every codec Kafka and librdkafka have)
COMPRESSION = ("none", "gzip", "snappy", "lz4", "zstd")
MAX_PARTITIONS = 4


def available(env: Env) -> dict[str, str]:
    """op kind -> why it is not available in `env` (only the ones that are not)."""
    return {name: why for name, op in OPS.items() if (why := op.missing(env))}


def faults_for(env: Env) -> tuple[str, ...]:
    return KFAKE_FAULTS if env.backend in ("kfake", "mock") else CLUSTER_FAULTS


def ack_types(env: Env) -> list[str]:
    types = [t for t in ("ACCEPT", "RELEASE", "REJECT") if f"ack:{t}" in env.features]
    if env.at_least("4.2") and "ack:RENEW" in env.features:
        types.append("RENEW")
    return types


def draw_setup(rng: random.Random, env: Env, seed: int = 0) -> Setup:
    """A group configuration for one run: small topics, short locks and low limits make the interesting
    moments (lock expiry, archiving at the limit, a partition added) come within a short run."""
    reset = rng.choices(["earliest", "latest", "by_duration:PT1H"], [6, 3, 1])[0]
    limit = rng.choice([None, 2, 3]) if env.at_least("4.3") else None
    dead_letter = rng.choices(["off", "headers", "copy"], [6, 2, 2])[0] if env.at_least("4.4") and \
        env.backend not in ("kfake", "mock") else "off"
    setup = Setup(partitions=rng.randint(1, 3), auto_offset_reset=reset, lock_duration_ms=rng.choice([3000, 5000, 8000]),
                  delivery_count_limit=limit, isolation_level=rng.choices(["read_uncommitted", "read_committed"],
                                                                          [7, 3])[0],
                  max_poll_records=rng.choice([3, 5, 10]), dead_letter=dead_letter)
    # drawn from a generator of their own, so the draws above (and every step) stay what a seed gave before
    more = random.Random(f"setup-{seed}")
    acquire = ["batch_optimized", "record_limit"] if env.at_least("4.2") and "acquire_mode" in env.features else \
        ["batch_optimized"]
    return replace(setup, compression=more.choices(COMPRESSION, [4, 1, 1, 1, 1])[0], acquire_mode=more.choice(acquire))


class _State:
    """What the generator assumes of the run so far (the runner decides for real)."""

    def __init__(self, setup: Setup) -> None:
        self.slots: list[str | None] = []  # mode of each consumer slot, None once it left
        self.held: set[int] = set()  # explicit slots that polled and have not acknowledged all since (maybe)
        self.partitions = setup.partitions
        self.faults: list[str] = []  # in place
        self.produced = 0

    def live(self) -> list[int]:
        return [i for i, mode in enumerate(self.slots) if mode is not None]


def generate(env: Env, kafka_version: str, client: str, seed: int, steps: int) -> Schedule:
    """A schedule of `steps` steps for the run seeded `seed` (the same seed, the same schedule)."""
    from harness.faults import CATALOGUE  # (deferred: loads confluent_kafka)
    rng = random.Random(seed)
    setup = draw_setup(rng, env, seed)
    state = _State(setup)
    missing = available(env)
    types = ack_types(env)
    faults = faults_for(env)
    out: list[Step] = []

    def can(op: str) -> bool:
        if op in missing:
            return False
        live = state.live()
        if op == "join":
            return len(live) < MAX_CONSUMERS
        if op == "poll":  # explicit mode refuses a poll with records unacknowledged
            return any(i not in state.held for i in live)
        if op in ("close", "crash", "commit"):
            return bool(live)
        if op in ("ack", "hold-past-lock"):
            return bool(types) and any(i in state.held for i in live)
        if op == "add-partitions":
            return state.partitions < MAX_PARTITIONS
        if op == "fault":
            return bool(faults) and not state.faults
        if op == "heal":
            return bool(state.faults)
        if op in ("delete-records", "alter-offsets", "delete-offsets"):
            return state.produced > 0
        return True

    def draw(op: str) -> Step:
        live = state.live()
        if op == "produce":
            count = rng.randint(1, 6)
            state.produced += count
            return Step(op, {"count": count, "partition": rng.randrange(MAX_PARTITIONS) if rng.random() < 0.7 else None})
        if op == "produce-txn":
            count = rng.randint(1, 4)
            state.produced += count
            return Step(op, {"count": count, "commit": rng.random() < 0.6, "partition": rng.randrange(MAX_PARTITIONS)})
        if op == "join":
            modes = [m for m in ("explicit", "implicit") if m in env.features]
            mode = rng.choices(modes, [3, 1][:len(modes)])[0]
            state.slots.append(mode)
            return Step(op, {"mode": mode})
        if op == "poll":
            slot = rng.choice([i for i in live if i not in state.held])
            if state.slots[slot] == "explicit":
                state.held.add(slot)
            return Step(op, {"slot": slot})
        if op == "ack":
            slot = rng.choice([i for i in live if i in state.held])
            type_, count = rng.choice(types), rng.choice([0, 0, 1, 2])
            if count == 0:  # a RENEW too: the renewed records come back with the next poll
                state.held.discard(slot)
            return Step(op, {"slot": slot, "type": type_, "count": count})
        if op == "commit":
            how = "async" if "commit_async" in env.features and rng.random() < 0.3 else "sync"
            return Step(op, {"slot": rng.choice(live), "how": how})
        if op in ("close", "crash"):
            slot = rng.choice(live)
            state.slots[slot] = None
            state.held.discard(slot)
            return Step(op, {"slot": slot})
        if op == "hold-past-lock":
            return Step(op, {"slot": rng.choice([i for i in live if i in state.held])})
        if op == "alter-offsets":
            return Step(op, {"partition": rng.randrange(MAX_PARTITIONS),
                             "to": rng.choice(["earliest", "latest", "middle"])})
        if op == "delete-offsets":
            return Step(op, {})
        if op == "delete-records":
            return Step(op, {"partition": rng.randrange(MAX_PARTITIONS), "fraction": rng.choice([0.5, 1.0])})
        if op == "add-partitions":
            add = rng.randint(1, MAX_PARTITIONS - state.partitions)
            state.partitions += add
            return Step(op, {"add": add})
        if op == "fault":
            name = rng.choice(faults)
            state.faults.append(name)
            return Step(op, {"name": name, "pick": rng.randrange(1000)})
        if op == "heal":
            state.faults.pop(0)
            return Step(op, {})
        raise AssertionError(op)

    # every run starts with a consumer and records, so its steps act on something (the shrinker may drop them);
    # under latest the runner warms every share-partition up first (`runner._Steps.warm_up`)
    for first in ("join", "produce"):
        if can(first):
            out.append(draw(first))
    while len(out) < steps:
        choices = [op for op in OPS if can(op)]
        op = rng.choices(choices, [WEIGHTS[o] for o in choices])[0]
        out.append(draw(op))
    assert all(CATALOGUE.get(s.args["name"]) is not None for s in out if s.op == "fault")
    return Schedule(kafka_version, client, env.backend, seed, setup, tuple(out))
