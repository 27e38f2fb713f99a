"""Admin calls confluent-kafka lacks, made through Kafka's Java Admin API.

Small Java programs in `harness/java` (`ShareOffsets`: a share group's start
offsets, SPSO per partition; `Quorum`: the KRaft metadata quorum and its
active controller; `ShareState`: a group's records in `__share_group_state`,
decoded with the release's own serde) are compiled once per Kafka version with `javac` against
that version's jars (cached). They run in a long-lived helper JVM per Kafka
distribution (`harness/java/JavaHelper.java`: a call costs a request, not a JVM
start), or as a short-lived process when a call needs its own environment. Start
offsets go into the history as `share-offsets` invoke/ok/fail, which the
durable-state checker compares with the model.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Iterator

from harness.errors import HarnessError
from harness.history.store import HistoryWriter
from harness.kafka import jars
from harness.kafka.dead_letter import parse_dead_letter
from harness.kafka.jars import KafkaDistribution, require_tool
from harness.kafka.versions import DEFAULT_VERSION, release_line
from harness.model.share_partition import ARCHIVED, ARCHIVING, STATE_IDS
from harness.sys import procs
from harness.sys.wait import WaitTimeout


def compiled(dist: KafkaDistribution, cache: Path, program: str = "ShareOffsets", extra: str = "",
             extra_key: str = "") -> Path:
    """Directory holding `<program>.class` (from harness/java) for `dist`, compiled on first use (with
    `extra`, more jars on the classpath before the release's, named in the cache entry by `extra_key`).

    The cache entry appears atomically: javac writes into a temp dir beside it, which is renamed
    into place. Processes compiling the same entry take turns on a lock file; if an entry is
    there once we hold it (another process won), theirs is kept.
    """
    source = resources.files("harness.java").joinpath(f"{program}.java").read_text()
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]  # an edited program is compiled again
    target = cache / "java" / f"{program}-{dist.version}{'-' + extra_key if extra_key else ''}-{digest}"
    if (target / f"{program}.class").is_file():
        return target
    javac = require_tool("javac", "install a JDK, not only a JRE (e.g. apt-get install openjdk-17-jdk-headless)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(target.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / f"{program}.class").is_file():  # compiled by another process while we waited
            return target
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
        os.chmod(tmp, 0o755)  # mkdtemp's 0700 would become the cache entry's mode
        procs.REAPER.register_dir(tmp)
        try:
            (tmp / f"{program}.java").write_text(source)
            classpath = os.pathsep.join(p for p in (extra, dist.classpath) if p)
            procs.run_checked("javac", [javac, "-cp", classpath, "-d", str(tmp), str(tmp / f"{program}.java")],
                              120, f"compiling {program}.java against Kafka {dist.version}")
            if target.exists() and not (target / f"{program}.class").is_file():
                shutil.rmtree(target, ignore_errors=True)  # an incomplete entry (older harness): replaced
            try:
                os.rename(tmp, target)
            except OSError:  # an entry appeared meanwhile: keep theirs
                if not (target / f"{program}.class").is_file():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            procs.REAPER.forget_dir(tmp)
    return target


def tools_dist(dist: KafkaDistribution, cache: Path) -> KafkaDistribution:
    """The distribution the harness's own Java tools run from against a cluster of `dist`'s release:
    its own, or the default release's where its jars lack what the tools call
    (`ReleaseLine.own_tools`: 4.0, 4.1)."""
    if release_line(dist.version).own_tools:
        return dist
    return jars.resolve(DEFAULT_VERSION, cache)


def run_java(dist: KafkaDistribution, cache: Path, program: str, *args: str, timeout: float = 60,
             env: dict[str, str] | None = None) -> dict:
    """Run a harness/java program and parse the JSON line it prints last; RuntimeError on any failure.
    `env`: variables added to the environment (e.g. KSH_CLIENT_PROPERTIES for ShareAdmin): such a call
    runs in a JVM of its own; every other call of a `HELPED` program runs in the helper JVM, the parent
    process's if it shares its helpers with this one (`shared_helpers_env`). It runs from `tools_dist(dist)`."""
    dist = tools_dist(dist, cache)
    if env is None and program in HELPED and not any("\t" in a or "\n" in a for a in args):
        printed = _call_shared(dist, cache, program, args, timeout)
        if printed is None:
            with _helper(dist, cache) as helper:
                printed = helper.call(program, args, timeout)
    else:
        printed = _run_once(dist, cache, program, args, timeout, env)
    try:
        return json.loads(printed.strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise RuntimeError(f"{program} printed no JSON: {exc}") from None


def _run_once(dist: KafkaDistribution, cache: Path, program: str, args: tuple[str, ...], timeout: float,
              env: dict[str, str] | None) -> str:
    """`program` in a JVM of its own: what it printed."""
    classes = compiled(dist, cache, program)
    try:
        proc = procs.run(program, ["java", "-Xmx128m", "-XX:TieredStopAtLevel=1",
                                   "-cp", f"{classes}{os.pathsep}{dist.classpath}", program, *args],
                         timeout=timeout, env=None if env is None else {**os.environ, **env})
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{program} did not finish within {timeout:.0f}s") from None
    if proc.returncode != 0:
        raise RuntimeError((proc.stderr.strip().splitlines() or ["exit " + str(proc.returncode)])[-1])
    return proc.stdout


#: the programs the helper JVM serves (each is a class with a main(String[]) that prints JSON)
#: batch states of a record archived, or being archived (its DLQ write under way: KIP-1191, 4.4)
ARCHIVED_IDS = (STATE_IDS[ARCHIVED], STATE_IDS[ARCHIVING])
HELPED = ("ShareOffsets", "ShareState", "Quorum", "ShareAdmin", "DeadLetters")
HELPER_NAME = "java-helper"  # its managed process's name (tests that count processes leave it out)
_ANSWER = b"@@ksh-helper "


def compiled_tools(dist: KafkaDistribution, cache: Path) -> str:
    """The harness's own Java tools (`HELPED` and the helper JVM), compiled for `dist` (`share-harness setup`: the
    main job's admin reads and state decoding, and `dist`'s kafka-tools jar, whose FeatureCommand finalises
    features): the directories, joined."""
    jars.tools_classpath(dist, cache)
    return os.pathsep.join(str(compiled(dist, cache, program)) for program in (*HELPED, "JavaHelper"))


class JavaHelper:
    """One long-lived JVM running `HELPED` programs of one Kafka distribution, a call at a time
    (`harness/java/JavaHelper.java`). A managed process: stopped with the harness, or on a timeout."""

    def __init__(self, dist: KafkaDistribution, cache: Path, start_timeout: float = 60) -> None:
        dirs = [str(compiled(dist, cache, program)) for program in (*HELPED, "JavaHelper")]
        self.proc = procs.spawn(HELPER_NAME, ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp",
                                              os.pathsep.join([*dirs, dist.classpath]), "JavaHelper"],
                                stdin_pipe=True, stdout_pipe=True)
        self._pending = bytearray()
        self.busy = False  # a request is out whose answer was not read (an interrupted call)
        try:
            self._answer(start_timeout, "the Java helper to start")
        except BaseException:
            self.stop()
            raise

    def alive(self) -> bool:
        return self.proc.alive()

    def stop(self) -> None:
        self.proc.kill()
        for pipe in (self.proc.popen.stdin, self.proc.popen.stdout):
            if pipe is not None:
                pipe.close()

    def call(self, program: str, args: tuple[str, ...], timeout: float) -> str:
        """What `program args` printed; RuntimeError if it threw (the exception), or did not answer
        within `timeout` (the helper is then stopped: it may be stuck)."""
        stdin = self.proc.popen.stdin
        self.busy = True
        try:
            stdin.write(("\t".join((program, *args)) + "\n").encode())
            stdin.flush()
        except (BrokenPipeError, ValueError):
            raise RuntimeError(f"the Java helper exited (code {self.proc.exit_code()}) before {program}") from None
        kind, payload = self._answer(timeout, program)
        self.busy = False
        if kind == "ERR":
            raise RuntimeError(payload)
        return payload

    def _answer(self, timeout: float, what: str) -> tuple[str, str]:
        """The next answer line: (OK | ERR | READY, its decoded payload); other lines are skipped."""
        deadline = time.monotonic() + timeout
        while True:
            line = self._line(deadline, timeout, what)
            if line.startswith(_ANSWER):
                kind, _, payload = line[len(_ANSWER):].decode().partition(" ")
                return kind, base64.b64decode(payload).decode(errors="replace")

    def _line(self, deadline: float, timeout: float, what: str) -> bytes:
        fd = self.proc.popen.stdout.fileno()
        while (end := self._pending.find(b"\n")) < 0:
            left = deadline - time.monotonic()
            ready = select.select([fd], [], [], max(0.0, left))[0] if left > 0 else []
            if not ready:
                self.stop()
                raise RuntimeError(f"{what} did not finish within {timeout:.0f}s: the Java helper was stopped")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                self.stop()
                raise RuntimeError(f"the Java helper exited (code {self.proc.exit_code()}) during {what}")
            self._pending += chunk
        line = bytes(self._pending[:end])
        del self._pending[:end + 1]
        return line


_helpers_lock = threading.Lock()
_idle_helpers: dict[tuple[str, str], list[JavaHelper]] = {}


@contextmanager
def _helper(dist: KafkaDistribution, cache: Path) -> Iterator[JavaHelper]:
    """An idle helper of `dist` (a new one if none is idle: concurrent calls get one each), returned
    to the idle list after a call that left it alive."""
    key = (dist.version, dist.classpath)
    with _helpers_lock:
        idle = _idle_helpers.setdefault(key, [])
        helper = idle.pop() if idle else None
    if helper is None or not helper.alive():
        helper = JavaHelper(dist, cache)
    try:
        yield helper
    finally:
        if helper.alive() and not helper.busy:
            with _helpers_lock:
                _idle_helpers.setdefault(key, []).append(helper)
        else:  # dead, or interrupted with an answer still to come: not reused
            helper.stop()


#: The environment variable naming a parent process's helper socket (`shared_helpers_env`).
SHARED_HELPERS_ENV = "KSH_JAVA_HELPERS"
_server: "_HelperServer | None" = None


class _HelperServer:
    """This process's helper JVMs served to its children (a certification's pytest child, issue 53): a Unix socket
    in a private directory; each connection one call, a JSON line each way, on a thread of its own (concurrent
    calls get a helper each, as in this process). A child then pays a request per call, not two JVMs warming up
    (1.5-3 s of a certification's durable read, measured on a child's first read)."""

    def __init__(self) -> None:
        import socket
        self.dir = Path(tempfile.mkdtemp(prefix="ksh-helpers-"))
        procs.REAPER.register_dir(self.dir)  # (served for the process's life: the reaper removes it after)
        self.path = str(self.dir / "socket")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(16)
        threading.Thread(target=self._accept, name="java-helpers", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._serve, args=(conn,), name="java-helper-call", daemon=True).start()

    @staticmethod
    def _serve(conn) -> None:
        with conn, conn.makefile("rwb") as stream:
            try:
                ask = json.loads(stream.readline())
                dist = KafkaDistribution(ask["version"], Path(ask["libs"]), ask["source"])
                with _helper(dist, Path(ask["cache"])) as helper:
                    answer = {"printed": helper.call(ask["program"], tuple(ask["args"]), float(ask["timeout"]))}
            except (RuntimeError, HarnessError, OSError, ValueError, KeyError, TypeError) as exc:
                answer = {"error": str(exc) or type(exc).__name__}
            try:
                stream.write(json.dumps(answer).encode() + b"\n")
                stream.flush()
            except OSError:
                pass  # the child went away


def shared_helpers_env() -> dict[str, str]:
    """The environment a child process is given to make its helper calls through this process's helpers (the
    socket served from here on, once per process)."""
    global _server
    with _helpers_lock:
        if _server is None:
            _server = _HelperServer()
        return {SHARED_HELPERS_ENV: _server.path}


def _call_shared(dist: KafkaDistribution, cache: Path, program: str, args: tuple[str, ...],
                 timeout: float) -> str | None:
    """What `program args` printed, asked of the parent's helpers (`SHARED_HELPERS_ENV`); None if no parent serves
    them (none named, or its socket gone: the caller uses a helper of its own); RuntimeError as `JavaHelper.call`."""
    import socket
    path = os.environ.get(SHARED_HELPERS_ENV)
    if not path:
        return None
    ask = {"version": dist.version, "libs": str(dist.libs), "source": dist.source, "cache": str(cache),
           "program": program, "args": list(args), "timeout": timeout}
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
    except OSError:
        return None
    with conn, conn.makefile("rwb") as stream:
        conn.settimeout(timeout + 30)  # the parent's helper is stopped after `timeout`, and says so
        try:
            stream.write(json.dumps(ask).encode() + b"\n")
            stream.flush()
            line = stream.readline()
        except OSError as exc:
            raise RuntimeError(f"the parent's Java helper did not answer {program}: {exc}") from None
    if not line:
        raise RuntimeError(f"the parent's Java helper closed the connection during {program}")
    answer = json.loads(line)
    if "error" in answer:
        raise RuntimeError(answer["error"])
    return answer["printed"]


def stop_helpers() -> None:
    """Stop every idle helper JVM of this process."""
    with _helpers_lock:
        helpers = [h for idle in _idle_helpers.values() for h in idle]
        _idle_helpers.clear()
    for helper in helpers:
        helper.stop()


def _after_fork_in_child() -> None:
    """A forked child (a driver, a pytest child) must not talk over its parent's pipes."""
    global _helpers_lock, _server
    _helpers_lock = threading.Lock()
    _idle_helpers.clear()
    _server = None  # (its thread did not come along; the parent's socket is the parent's)


os.register_at_fork(after_in_child=_after_fork_in_child)


def read_share_offsets(dist: KafkaDistribution, cache: Path, bootstrap: str, group: str,
                       history: HistoryWriter, process: str = "admin") -> list[dict] | None:
    """Record one read of `group`'s start offsets in `history`; None (and a `fail`) if it did not work."""
    compiled(tools_dist(dist, cache), cache)  # a compile error is the user's to fix (HarnessError), not a failed read
    history.append(process, "invoke", "share-offsets", {"group": group})
    try:
        partitions = run_java(dist, cache, "ShareOffsets", bootstrap, group)["partitions"]
    except (RuntimeError, KeyError, TypeError) as exc:
        history.append(process, "fail", "share-offsets", {"group": group, "error": str(exc)[:300]})
        return None
    history.append(process, "ok", "share-offsets", {"group": group, "partitions": partitions})
    return partitions


def combine_share_state(records: list[dict], topic_names: dict[str, str]) -> list[dict]:
    """The state each share-partition has after `records` (decoded `__share_group_state`, in log order),
    as the share coordinator replays them (`ShareCoordinatorShard.merge`, `PersisterStateBatchCombiner`):
    the last snapshot, with every later update merged in. Where an update's batch overlaps the state
    so far, the higher delivery count wins, then the higher state (ARCHIVED > ACKNOWLEDGED >
    AVAILABLE), not the later write; an update's start offset, when set (not -1), replaces the start
    even if lower (4.4 writes the higher one); offsets below the start are dropped.

    Partitions of topics not in `topic_names` (id -> name) are left out. Each partition also has
    `max_start_offset` (the highest start offset ever written; above `start_offset` when the start went
    back) and the `writes` its state came from (the snapshot, then the updates: `[kind, leader epoch,
    start offset, batches]`, the last 50), the evidence a state-topic anomaly prints; `start_regressions`,
    each write that moved the start back below the highest before it (`[timestamp ms, highest, start]`,
    the first 50: when, on the writer's clock, for a history whose releases changed). And what every write
    since the share-partition's first one held, as merged `[first, last]` ranges: `ever_written` (in
    any batch) and `ever_archived` (in a batch as ARCHIVED), from `writes_from` (the first write's start
    offset): the evidence the checkers ask of a record archived by acquisitions the history never saw."""
    topic_names = {_uuid_key(k): v for k, v in topic_names.items()}
    replay = _StateReplay()
    for r in records:
        replay.apply(r)
    return [replay.partition_state(key, topic_names[key[0]]) for key in sorted(replay.states)
            if key[0] in topic_names]


class _StateReplay:
    """`__share_group_state` records replayed in log order, per share-partition (topic id, partition)."""

    def __init__(self) -> None:
        # key -> (start offset, offset -> (state, delivery count))
        self.states: dict[tuple[str, int], tuple[int, dict[int, tuple[int, int]]]] = {}
        self.writes: dict[tuple[str, int], list[list]] = {}
        self.max_start: dict[tuple[str, int], int] = {}
        self.ever: dict[tuple[str, int], tuple[int, list, list]] = {}  # key -> (writes_from, written, archived)
        #: key -> every write that moved the start offset back: [timestamp ms, highest start before, start]
        self.regressions: dict[tuple[str, int], list[list[int]]] = {}

    def apply(self, r: dict) -> None:
        key = (_uuid_key(r["topic_id"]), r["partition"])
        if r["type"] == "tombstone":
            for table in (self.states, self.writes, self.max_start, self.ever, self.regressions):
                table.pop(key, None)
            return
        self._note_ranges(key, r)
        self._note_write(key, r)
        self._merge(key, r)

    def _note_ranges(self, key: tuple[str, int], r: dict) -> None:
        """The offset ranges every write since the first held: in any batch, and in a batch as ARCHIVED."""
        _, written, archived = self.ever.setdefault(key, (max(0, r["start_offset"]), [], []))
        for first, last, state, _ in r["batches"]:
            written.append((first, last))
            if state in ARCHIVED_IDS:
                archived.append((first, last))

    def _note_write(self, key: tuple[str, int], r: dict) -> None:
        """The highest start offset ever written, the writes since the last snapshot (the last 50), and when
        a write moved the start back (the record's timestamp, where the decoder gave one; the first 50)."""
        top = self.max_start.get(key)
        if top is not None and 0 <= r["start_offset"] < top and "timestamp" in r:
            regressions = self.regressions.setdefault(key, [])
            if len(regressions) < 50:
                regressions.append([int(r["timestamp"]), top, r["start_offset"]])
        self.max_start[key] = max(self.max_start.get(key, 0), r["start_offset"])
        if r["type"] != "update":
            self.writes[key] = []
        self.writes.setdefault(key, []).append([r["type"], r.get("leader_epoch", -1), r["start_offset"], r["batches"]])
        del self.writes[key][:-50]

    def _merge(self, key: tuple[str, int], r: dict) -> None:
        """A snapshot replaces the state; an update's batches are merged in (higher delivery count, then
        higher state, wins), its start offset (when not -1) replaces the start; offsets below it are dropped."""
        start, offsets = self.states.get(key, (0, {})) if r["type"] == "update" else (0, {})
        if r["start_offset"] >= 0:
            start = r["start_offset"]
        offsets = dict(offsets)
        for first, last, state, count in r["batches"]:
            for o in range(first, last + 1):
                old = offsets.get(o)
                if old is None or (count, state) >= (old[1], old[0]):
                    offsets[o] = (state, count)
        self.states[key] = (start, {o: sc for o, sc in offsets.items() if o >= start})

    def partition_state(self, key: tuple[str, int], topic: str) -> dict:
        """One entry of `combine_share_state`'s answer."""
        start, offsets = self.states[key]
        batches = _as_batches(offsets)
        writes_from, written, archived = self.ever[key]
        return {"topic": topic, "partition": key[1], "start_offset": start, "batches": batches,
                "max_start_offset": max(start, self.max_start.get(key, 0)), "writes": self.writes.get(key, []),
                "writes_from": writes_from, "ever_written": _merged(written), "ever_archived": _merged(archived),
                "start_regressions": self.regressions.get(key, [])}


def _as_batches(offsets: dict[int, tuple[int, int]]) -> list[list[int]]:
    """offset -> (state, delivery count) as `[first, last, state, count]` batches of consecutive offsets."""
    batches: list[list[int]] = []
    for o in sorted(offsets):
        state, count = offsets[o]
        if batches and batches[-1][1] == o - 1 and batches[-1][2:] == [state, count]:
            batches[-1][1] = o
        else:
            batches.append([o, o, state, count])
    return batches


def _merged(ranges: list[tuple[int, int]]) -> list[list[int]]:
    """Inclusive ranges merged where they overlap or touch: [(5, 9), (0, 3), (4, 4)] -> [[0, 9]]."""
    out: list[list[int]] = []
    for first, last in sorted(ranges):
        if out and first <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], last)
        else:
            out.append([first, last])
    return out


def _uuid_key(topic_id: str) -> str:
    """Kafka prints topic ids in URL-safe base64 (Java's Uuid), librdkafka in the standard alphabet."""
    return topic_id.replace("+", "-").replace("/", "_").rstrip("=")


def read_share_state(dist: KafkaDistribution, cache: Path, bootstrap: str, group: str,
                     topic_names: dict[str, str], history: HistoryWriter, process: str = "admin") -> list[dict] | None:
    """Record one decoding of `group`'s state in `__share_group_state`; None (and a `fail` naming why,
    e.g. a release whose share coordinator classes differ) if it did not work."""
    history.append(process, "invoke", "share-state", {"group": group})
    try:
        records = run_java(dist, cache, "ShareState", bootstrap, group)["records"]
        partitions = combine_share_state(records, topic_names)
    except (HarnessError, RuntimeError, KeyError, TypeError, ValueError) as exc:
        history.append(process, "fail", "share-state", {"group": group, "error": str(exc)[:300]})
        return None
    history.append(process, "ok", "share-state", {"group": group, "partitions": partitions})
    return partitions


def read_dead_letters(dist: KafkaDistribution, cache: Path, bootstrap: str, group: str, dlq_topic: str,
                      history: HistoryWriter, process: str = "admin-dlq",
                      archiving: list[list] | None = None) -> list[dict] | None:
    """Record one read of `group`'s dead-letter queue topic `dlq_topic` (KIP-1191) in `history`: each DLQ
    record's source record (from its context headers), key and value (`harness.kafka.dead_letter`), and
    `archiving`, the [topic, partition, first, last] ranges the share coordinator still held ARCHIVING
    (their DLQ writes under way: not judged missing); None (and a `fail` naming why) if it did not work."""
    history.append(process, "invoke", "dead-letters", {"group": group, "dlq_topic": dlq_topic})
    try:
        records = [parse_dead_letter(r) for r in run_java(dist, cache, "DeadLetters", bootstrap, dlq_topic)["records"]]
    except (HarnessError, RuntimeError, KeyError, TypeError, ValueError) as exc:
        history.append(process, "fail", "dead-letters", {"group": group, "dlq_topic": dlq_topic,
                                                        "error": str(exc)[:300]})
        return None
    history.append(process, "ok", "dead-letters", {"group": group, "dlq_topic": dlq_topic, "records": records,
                                                    **({"archiving": archiving} if archiving else {})})
    return records


def share_probe(dist: KafkaDistribution, cache: Path, bootstrap: str, group: str, topic: str, token: str,
                timeout: float) -> None:
    """Block until a KafkaShareConsumer of `dist`'s own release, in `group`, receives the record `token`
    from `topic` (`harness/java/ShareProbe.java`, a JVM of its own); a WaitTimeout naming the Java
    consumer's last error line if it does not within `timeout`. The readiness probe of the lines
    librdkafka cannot talk to (4.1)."""
    try:
        _run_once(dist, cache, "ShareProbe", (bootstrap, group, topic, token, str(int(timeout * 1000))),
                  timeout + 30, None)
    except RuntimeError as exc:
        raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for a share group to consume a record "
                          f"(Kafka {dist.version}'s KafkaShareConsumer: {exc})") from None


def active_controller(dist: KafkaDistribution, cache: Path, bootstrap: str) -> int | None:
    """The id of the active controller (leader of the metadata quorum), or None if there is none now."""
    leader = run_java(dist, cache, "Quorum", bootstrap, timeout=30).get("leader")
    return leader if isinstance(leader, int) and leader >= 0 else None
