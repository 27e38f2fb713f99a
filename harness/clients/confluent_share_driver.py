"""Share-consumer driver for confluent-kafka's `ShareConsumer`, run as its own process.

    python -m harness.clients.confluent_share_driver '<json config>'

Config keys: `bootstrap`, `group`, `topics`, `behaviour` (one of
`harness.clients.behaviours.BEHAVIOURS`: implicit mode, where the commit_sync
that follows a poll accepts the batch, or explicit acknowledgements decided
per record from `seed`, then commit_sync, or commit_async for `accept-async`), `seed`, `hold_ms` (how long the
`slow` behaviour holds a batch), `client_config` (extra librdkafka
properties), `poll_timeout` (seconds).

Behaviour `step` (conformance tests, certification) does nothing on its own: it runs the
commands it reads on stdin, one JSON object per line, in order (`docs/driver.md`):
`{"cmd": "poll", "timeout": S}` polls until a batch arrives or S seconds pass;
`{"cmd": "ack", "records": [{"topic", "partition", "offset", "type"}]}` acknowledges records of
the batches it was given; `{"cmd": "commit_sync"}`, `{"cmd": "commit_async"}`; `{"cmd": "close"}`.
Config key `mode`: `explicit` (default) or `implicit` (the next poll or commit accepts the batch:
the driver prints that acknowledgement first). After each command it prints
`{"type": "ok", "f": "step", "value": {"n": N, ...}}` (N counts commands from 1), which the
harness takes as the command's end and keeps out of the history.

Prints one JSON operation per line on stdout (`{"type","f","value"}`, see
`harness.history.schema`); reads commands on stdin: `close` closes the
consumer cleanly and exits; `abandon` closes it right after the next poll
that delivers records, without acknowledging them (records in flight; only
in explicit mode, where nothing acknowledges them implicitly). It must print only what really happened: a
commit that raised is `info` (unknown), never `ok`; a held batch prints a `hold` op before it sleeps.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

import confluent_kafka
from confluent_kafka import AcknowledgeType, KafkaError, KafkaException, ShareConsumer

from harness.clients.behaviours import BEHAVIOURS, ack_type, commits_async, explicit as is_explicit, holds
from harness.clients.contract import CONTRACT_VERSION

_ACK = {"ACCEPT": AcknowledgeType.ACCEPT, "RELEASE": AcknowledgeType.RELEASE, "REJECT": AcknowledgeType.REJECT}
_out_lock = threading.Lock()


def emit(type_: str, f: str, value: Any = None) -> None:
    with _out_lock:
        sys.stdout.write(json.dumps({"type": type_, "f": f, "value": value}, separators=(",", ":")) + "\n")
        sys.stdout.flush()


def _error_text(err: Any) -> str | None:
    if err is None:
        return None
    if isinstance(err, KafkaException) and err.args:
        err = err.args[0]
    name = getattr(err, "name", None)
    return f"{name()}: {err.str()}" if callable(name) else str(err)


def _on_commit(offsets: dict, exc: Any) -> None:
    parts = [{"topic": tp.topic, "partition": tp.partition, "offsets": sorted(offs)}
             for tp, offs in offsets.items()]
    emit("ok", "callback", {"partitions": parts, "error": _error_text(exc)})


def _on_error(err: Any) -> None:
    """librdkafka's error callback, served by poll: an authentication failure is reported only here (the
    Java client throws it from poll), so it is printed as the poll's error. Its other errors (a broker
    down, a transport failure) are retried by the library and are not printed: the history's client
    errors are what a poll raised or returned."""
    if err.code() == KafkaError._AUTHENTICATION:
        emit("info", "error", {"code": err.code(), "message": _error_text(err)})


class Refused(Exception):
    """The library refused to construct the consumer (its `start` `fail` event is printed: driver contract 4)."""


def _subscribed(config: dict[str, Any], explicit: bool, start: dict[str, Any], subscribe: bool = True) -> ShareConsumer:
    """The consumer of `config`, subscribed (unless `subscribe` is false), its commit callback set; prints
    `start`. A configuration the library refuses at construction prints `start` `fail` and raises Refused."""
    props = {"bootstrap.servers": config["bootstrap"], "group.id": config["group"],
             "share.acknowledgement.mode": "explicit" if explicit else "implicit",
             "error_cb": _on_error, **config.get("client_config", {})}
    if config.get("mode") == "default":  # contract 3: the library's own default mode (documented implicit)
        del props["share.acknowledgement.mode"]
    try:
        consumer = ShareConsumer(props)
    except (ValueError, KafkaException) as exc:  # contract 4: a refused configuration is a result
        emit("fail", "start", {"client": "confluent-kafka", "client_version": confluent_kafka.version(),
                               "contract": CONTRACT_VERSION, "error": f"{type(exc).__name__}: {_error_text(exc)}"})
        raise Refused() from None
    consumer.set_acknowledgement_commit_callback(_on_commit)
    if subscribe and config["topics"]:  # none: no subscribe() call at all (what subscription() says then)
        consumer.subscribe(config["topics"])
    emit("ok", "start", {"client": "confluent-kafka", "client_version": confluent_kafka.version(),
                         "librdkafka": confluent_kafka.libversion()[0], "contract": CONTRACT_VERSION,
                         "ignored_config": [],  # librdkafka refuses a property it does not know: none is ignored
                         **start})
    return consumer


def run(config: dict[str, Any], stop: threading.Event, abandon: threading.Event | None = None) -> None:
    behaviour, seed = config["behaviour"], int(config.get("seed", 0))
    explicit = is_explicit(behaviour)
    consumer = _subscribed(config, explicit, {"behaviour": behaviour})
    timeout = float(config.get("poll_timeout", 0.5))
    while not stop.is_set():
        try:
            messages = consumer.poll(timeout)
        except KafkaException as exc:
            emit("info", "error", {"code": exc.args[0].code(), "message": _error_text(exc)})
            continue
        records = []
        for msg in messages:
            if msg.error() is not None:
                emit("info", "error", {"code": msg.error().code(), "message": _error_text(msg.error())})
                continue
            records.append(msg)
        if not records:
            continue
        emit("ok", "poll", {"records": [
            {"id": _id(m), "topic": m.topic(), "partition": m.partition(),
             "offset": m.offset(), "delivery_count": m.delivery_count()} for m in records]})
        if abandon is not None and abandon.is_set() and explicit:
            break  # close holding the records just delivered
        first = records[0]
        if holds(behaviour, seed, _id(first), first.delivery_count()):
            hold = float(config.get("hold_ms", 0)) / 1000
            emit("ok", "hold", {"seconds": hold})
            if stop.wait(hold):
                break  # asked to close while holding: close with the records still acquired
        types = [ack_type(behaviour, seed, _id(m), m.delivery_count()) if explicit else "ACCEPT" for m in records]
        if explicit:
            for msg, type_ in zip(records, types):
                consumer.acknowledge(msg, _ACK[type_])
        emit("ok", "acknowledge", {"records": [
            {"topic": m.topic(), "partition": m.partition(), "offset": m.offset(), "type": type_}
            for m, type_ in zip(records, types)]})
        if commits_async(behaviour):
            commit_async(consumer)
        else:
            commit(consumer)
    emit("invoke", "close", {})
    try:
        consumer.close()
        emit("ok", "close", {})
    except KafkaException as exc:
        emit("info", "close", {"error": _error_text(exc)})


def _id(msg: Any) -> str:
    return (msg.value() or b"").decode(errors="replace")


def commit_async(consumer: ShareConsumer) -> None:
    """commit_async: no result here (the callback brings it); an exception makes the outcome unknown."""
    emit("invoke", "commit", {"async": True})
    try:
        consumer.commit_async()
    except KafkaException as exc:
        emit("info", "commit", {"error": _error_text(exc)})


def commit(consumer: ShareConsumer, timeout: float | None = 30.0) -> None:
    """commit_sync with per-partition results; an exception makes the outcome unknown. `timeout` None: the
    call without an argument (contract 3), the library's default."""
    emit("invoke", "commit", {})
    try:
        results = consumer.commit_sync() if timeout is None else consumer.commit_sync(float(timeout))
    except KafkaException as exc:
        emit("info", "commit", {"error": _error_text(exc)})
        return
    emit("ok", "commit", {"results": [
        {"topic": tp.topic, "partition": tp.partition, "error": _error_text(err)}
        for tp, err in results.items()]})


def run_steps(config: dict[str, Any], commands) -> None:
    """The `step` behaviour: run each command of `commands` (JSON lines) and mark its end."""
    explicit = config.get("mode", "explicit") == "explicit"
    mode = "explicit" if explicit else config.get("mode", "implicit")  # "default": no mode set (contract 3)
    consumer = _subscribed(config, explicit, {"behaviour": "step", "mode": mode})
    given: dict[tuple, Any] = {}  # (topic, partition, offset) -> the message, from the polls so far
    unacked: list = []  # implicit mode: the last batch, which the next poll or commit accepts
    n = 0
    for line in commands:
        if not line.strip():
            continue
        n += 1
        try:
            command = json.loads(line)
            cmd = command["cmd"]
        except (ValueError, KeyError, TypeError):
            emit("info", "error", {"code": None, "message": f"bad command: {line.strip()[:200]}"})
            emit("ok", "step", {"n": n, "cmd": None})
            continue
        reply: dict[str, Any] = {"n": n, "cmd": cmd}
        if not explicit and unacked and cmd in ("poll", "poll_once", "commit_sync", "commit_async"):
            emit("ok", "acknowledge", {"records": [
                {"topic": m.topic(), "partition": m.partition(), "offset": m.offset(), "type": "ACCEPT"}
                for m in unacked]})
            unacked = []
        if cmd == "close":
            break
        try:
            reply.update(_step(consumer, cmd, command, given))
        except Exception as exc:  # e.g. IllegalStateException: a poll with records unacknowledged
            reply["error"] = f"{type(exc).__name__}: {exc}"
            emit("info", "error", {"code": None, "message": f"{cmd}: {reply['error']}"})
        if cmd in ("poll", "poll_once") and not explicit:
            unacked = reply.pop("batch", [])
        reply.pop("batch", None)
        emit("ok", "step", reply)
    emit("invoke", "close", {})
    try:
        consumer.close()
        emit("ok", "close", {})
    except KafkaException as exc:
        emit("info", "close", {"error": _error_text(exc)})
    emit("ok", "step", {"n": n, "cmd": "close"})


def _step(consumer: ShareConsumer, cmd: str, command: dict, given: dict) -> dict[str, Any]:
    """Run one command (not close); what the end marker reports."""
    if cmd == "poll":
        records = _poll_batch(consumer, float(command.get("timeout", 5.0)))
        given.update({(m.topic(), m.partition(), m.offset()): m for m in records})
        return {"records": len(records), "batch": records}
    if cmd == "ack":  # (contract 1's call unchanged: drivers that wrap this one replace _acknowledge and commit)
        by_offset = {"by_offset": True} if command.get("by") == "offset" else {}
        return {"error": _acknowledge(consumer, given, command.get("records", []), **by_offset)}
    if cmd == "commit_sync":
        commit(consumer, *((command["timeout"],) if "timeout" in command else ()))  # null: no argument (contract 3)
        return {}
    if cmd == "poll_once":  # contract 3: one library call, timed
        began = time.monotonic()
        try:
            messages = consumer.poll(float(command.get("timeout", 1.0)))
        except KafkaException as exc:  # reported with its code, as _poll_batch does
            emit("info", "error", {"code": exc.args[0].code(), "message": _error_text(exc)})
            return {"records": 0, "elapsed_ms": int((time.monotonic() - began) * 1000), "error": _error_text(exc)}
        elapsed_ms = int((time.monotonic() - began) * 1000)
        records = _handed(messages)
        given.update({(m.topic(), m.partition(), m.offset()): m for m in records})
        return {"records": len(records), "elapsed_ms": elapsed_ms, "batch": records}
    if cmd == "commit_async":
        commit_async(consumer)
        return {}
    if cmd == "unsubscribe":  # contract 2
        consumer.unsubscribe()
        return {}
    if cmd == "subscribe":  # contract 3
        consumer.subscribe(list(command.get("topics", [])))
        return {}
    if cmd == "subscription":  # contract 3
        return {"topics": sorted(consumer.subscription())}
    return {"error": f"unknown command {cmd!r}"}


def _poll_batch(consumer: ShareConsumer, timeout: float) -> list:
    """Poll until one batch with records arrives or `timeout` seconds pass; print it."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        try:
            messages = consumer.poll(max(0.05, min(left, 0.5)))
        except KafkaException as exc:
            emit("info", "error", {"code": exc.args[0].code(), "message": _error_text(exc)})
            messages = []
        records = _handed(messages)
        if records:
            return records
        if time.monotonic() >= deadline:
            return []


def _handed(messages) -> list:
    """The records of one poll's `messages`, printed as its `poll` op (an error in place of a record: an `error`)."""
    records = []
    for msg in messages:
        if msg.error() is not None:
            emit("info", "error", {"code": msg.error().code(), "message": _error_text(msg.error())})
        else:
            records.append(msg)
    if records:
        emit("ok", "poll", {"records": [
            {"id": _id(m), "topic": m.topic(), "partition": m.partition(),
             "offset": m.offset(), "delivery_count": m.delivery_count()} for m in records]})
    return records


def _acknowledge(consumer: ShareConsumer, given: dict, records: list, by_offset: bool = False) -> str | None:
    """Acknowledge `records` (each must come from a poll); print what the client accepted.
    A record the client refuses is printed as a failed acknowledgement with the client's error.
    Contract 3: a record without `type` is acknowledged with the library's one-argument call (documented
    ACCEPT, printed so); `by_offset`: by topic, partition and offset (`acknowledge_offset`), not the message."""
    done, error = [], None
    for r in records:
        key = (r["topic"], int(r["partition"]), int(r["offset"]))
        msg = given.get(key)
        type_ = r.get("type")
        try:
            if msg is None:
                raise KeyError(f"{key[0]}-{key[1]}@{key[2]} was never returned by a poll")
            if by_offset:
                consumer.acknowledge_offset(*key, *(() if type_ is None else (_ACK[type_],)))
            else:
                consumer.acknowledge(msg, *(() if type_ is None else (_ACK[type_],)))
            done.append({"topic": key[0], "partition": key[1], "offset": key[2], "type": type_ or "ACCEPT"})
        except (KafkaException, KeyError, ValueError, TypeError, RuntimeError) as exc:
            error = _error_text(exc) if isinstance(exc, KafkaException) else f"{type(exc).__name__}: {exc}"
            emit("fail", "acknowledge", {"records": [
                {"topic": key[0], "partition": key[1], "offset": key[2], "type": type_ or "ACCEPT"}], "error": error})
    if done:
        emit("ok", "acknowledge", {"records": done})
    return error


def _watch_stdin(stop: threading.Event, abandon: threading.Event) -> None:
    for line in sys.stdin:
        if line.strip() == "close":
            break
        if line.strip() == "abandon":
            abandon.set()
    stop.set()  # "close" or EOF (the harness went away): close cleanly


def main(argv: list[str]) -> int:
    config = json.loads(argv[1])
    try:
        return _main(config)
    except Refused:  # its start event said so
        return 0


def _main(config: dict[str, Any]) -> int:
    if config.get("behaviour") == "step":
        run_steps(config, sys.stdin)
        return 0
    if config.get("behaviour") not in BEHAVIOURS:
        print(f"unknown behaviour {config.get('behaviour')!r}: use one of {', '.join(BEHAVIOURS)}", file=sys.stderr)
        return 2
    stop, abandon = threading.Event(), threading.Event()
    threading.Thread(target=_watch_stdin, args=(stop, abandon), daemon=True).start()
    run(config, stop, abandon)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
