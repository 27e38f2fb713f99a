"""librdkafka's mock cluster as a process of its own: the launcher of the coming `mock` backend (issue 52).

confluent-kafka's wheel bundles librdkafka, and that library holds a mock Kafka cluster (`rd_kafka_mock_*`,
src/rdkafka_mock.h) serving ShareGroupHeartbeat, ShareFetch and ShareAcknowledge (v1). Nothing is
downloaded: `python -m harness.cluster.rdmock --brokers N` loads the library the install already has with
ctypes, starts an N-broker mock cluster on 127.0.0.1 (ephemeral ports: the mock binds port 0), prints one JSON
line {"event": "ready", "bootstraps": "...", "librdkafka": "<version>"} and then answers commands on stdin,
one per line, each with one JSON line ({"ok": true} or {"error": "..."}):

    topic-create TOPIC PARTITIONS REPLICATION   (the mock serves no CreateTopics: topics are made here)
    broker-down ID | broker-up ID               (connections closed, port kept; -1: every broker)
    leader TOPIC PARTITION ID                   (the partition's leader moved, every broker up)
    rtt ID MS                                   (the broker answers MS later)
    errors APIKEY ERR[,ERR...]                  (the next requests of that API answer these error codes)
    errors-clear APIKEY                         (those not answered yet dropped)
    coordinator KEY ID                          (the group coordinator of KEY)
    lock-duration MS | delivery-limit N | offset-reset earliest|latest | isolation read_uncommitted|read_committed
    session-timeout MS | heartbeat-interval MS  (the share groups' settings; the last two for groups made later)

End of stdin (the harness closed it, or died) or SIGTERM destroys the cluster and exits 0: the launcher never
outlives the process that started it. A library without the mock's share groups is refused in one line
(exit 2). The mock's own simplifications of KIP-932 are the gate's findings, not the launcher's.

What the backend built on it must route around (librdkafka's `src/rdkafka_mock_handlers.c`, its handler table,
read at commit 4c3b017c; the bundled 2.16.0 answered ApiVersions the same but for Metadata v13): the mock serves
Produce, Fetch, ListOffsets, Metadata, the group and transaction APIs, ShareGroupHeartbeat, ShareFetch and
ShareAcknowledge (v1 each: no RENEW), and none of CreateTopics, DeleteRecords, DescribeConfigs,
IncrementalAlterConfigs, ListGroups, DescribeCluster, ShareGroupDescribe or the share-group offset APIs
(Describe/Alter/DeleteShareGroupOffsets): a request of those closes the connection. So topics are made, and a
share group's settings set, through this launcher (`topic-create`, `lock-duration`, ...), and the durable-state
checks have nothing to read there.
"""

from __future__ import annotations

import ctypes
import json
import signal
import sys
from pathlib import Path
from typing import Callable

#: The symbol whose presence says the mock serves share groups (librdkafka 2.12+).
SHARE_SYMBOL = "rd_kafka_mock_sharegroup_set_record_lock_duration"
#: The share-group settings the launcher sets, each a setter of one int (offset reset and isolation: named).
_SETTERS = {"lock-duration": "record_lock_duration", "delivery-limit": "max_delivery_attempts",
            "session-timeout": "session_timeout", "heartbeat-interval": "heartbeat_interval"}
_NAMED = {"offset-reset": ("auto_offset_reset", {"latest": 0, "earliest": 1}),
          "isolation": ("isolation_level", {"read_uncommitted": 0, "read_committed": 1})}


class MockError(Exception):
    """A refusal of the launcher: one line."""


def library_path() -> Path:
    """The librdkafka confluent-kafka loads (its wheel's `confluent_kafka.libs`); one line where none is."""
    try:
        import confluent_kafka  # (deferred: only the launcher's process loads librdkafka)
    except ImportError:
        raise MockError("confluent-kafka is not installed: pip install confluent-kafka (its wheel bundles "
                        "librdkafka and the mock cluster)") from None
    libs = Path(confluent_kafka.__file__).resolve().parent.parent / "confluent_kafka.libs"
    found = sorted(libs.glob("librdkafka*.so*")) if libs.is_dir() else []
    if not found:
        raise MockError(f"no bundled librdkafka in {libs}: install confluent-kafka from its wheel (pip install "
                        "--force-reinstall --only-binary :all: confluent-kafka)")
    return found[0]


class MockCluster:
    """An N-broker mock cluster in this process (`close` destroys it)."""

    def __init__(self, brokers: int, lib: ctypes.CDLL | None = None, debug: str = "") -> None:
        self.lib = lib if lib is not None else ctypes.CDLL(str(library_path()))
        self.lib.rd_kafka_version_str.restype = ctypes.c_char_p
        if not hasattr(self.lib, SHARE_SYMBOL):
            raise MockError(f"this librdkafka ({self.version}) has no mock share groups ({SHARE_SYMBOL} missing): "
                            "install confluent-kafka 2.12 or newer")
        lib = self.lib
        lib.rd_kafka_conf_new.restype = ctypes.c_void_p
        lib.rd_kafka_conf_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                          ctypes.c_size_t]
        lib.rd_kafka_new.restype = ctypes.c_void_p
        lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        lib.rd_kafka_conf_destroy.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
        lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.rd_kafka_mock_cluster_destroy.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
        lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_err2name.restype = ctypes.c_char_p
        errstr = ctypes.create_string_buffer(512)
        conf = lib.rd_kafka_conf_new()
        # the handle the mock needs: a producer that connects nowhere (its own log kept off stderr's way)
        settings = [("bootstrap.servers", ""), ("log_level", "7" if debug else "3")] + ([("debug", debug)] if debug else [])
        for key, value in settings:
            if lib.rd_kafka_conf_set(conf, key.encode(), value.encode(), errstr, len(errstr)) != 0:  # RD_KAFKA_CONF_OK
                lib.rd_kafka_conf_destroy(conf)
                raise MockError(f"librdkafka refused {key}: {errstr.value.decode(errors='replace')}")
        self._rk = lib.rd_kafka_new(0, conf, errstr, len(errstr))
        if not self._rk:  # (the conf is the caller's again when rd_kafka_new fails)
            lib.rd_kafka_conf_destroy(conf)
            raise MockError(f"librdkafka refused its handle: {errstr.value.decode(errors='replace')}")
        self._mc = lib.rd_kafka_mock_cluster_new(self._rk, brokers)
        if not self._mc:
            lib.rd_kafka_destroy(self._rk)
            raise MockError(f"librdkafka could not start a mock cluster of {brokers} brokers")
        self.brokers = brokers
        self.handlers = self._handlers()

    @property
    def version(self) -> str:
        return self.lib.rd_kafka_version_str().decode()

    @property
    def bootstraps(self) -> str:
        return self.lib.rd_kafka_mock_cluster_bootstraps(self._mc).decode()

    def close(self) -> None:
        """The cluster first, then its handle (librdkafka asserts that order)."""
        if self._mc:
            self.lib.rd_kafka_mock_cluster_destroy(self._mc)
            self._mc = None
        if self._rk:
            self.lib.rd_kafka_destroy(self._rk)
            self._rk = None

    def _err(self, code: int) -> None:
        if code:
            raise MockError(self.lib.rd_kafka_err2name(code).decode())

    def _broker(self, text: str, every: bool = True) -> int:
        """A broker id of the mock's (`every`: -1 for all of them, where the command takes that)."""
        broker = int(text)
        if not (every and broker == -1) and not 1 <= broker <= self.brokers:
            raise MockError(f"no broker {broker}: the mock's brokers are 1..{self.brokers}" + (" (-1: all)" if every
                                                                                              else ""))
        return broker

    def command(self, line: str) -> dict:
        """One command line -> its answer (a refusal or an error of the mock: {"error": ...}, never an exception)."""
        words = line.split()
        if not words:
            return {"error": "empty command"}
        if not self._mc:  # (the handlers hold the cluster's pointer: none after `close`)
            return {"error": "the mock cluster is closed"}
        try:
            handler = self.handlers.get(words[0])
            if handler is None:
                return {"error": f"unknown command {words[0]!r}: use one of {', '.join(self.handlers)}"}
            return handler(*words[1:]) or {"ok": True}
        except TypeError:
            return {"error": f"wrong number of arguments for {words[0]}"}
        except ValueError as exc:
            return {"error": f"bad argument for {words[0]}: {exc}"}
        except MockError as exc:
            return {"error": str(exc)}

    def _handlers(self) -> dict[str, Callable[..., dict | None]]:
        lib, mc = self.lib, self._mc
        c_int, c_char_p = ctypes.c_int, ctypes.c_char_p

        def topic_create(topic: str, partitions: str, replication: str) -> None:
            count, copies = int(partitions), int(replication)
            if not 1 <= count <= 10_000 or not 1 <= copies <= self.brokers:  # (librdkafka would allocate from them)
                raise MockError(f"topic {topic}: use 1..10000 partitions and 1..{self.brokers} replicas")
            self._err(lib.rd_kafka_mock_topic_create(ctypes.c_void_p(mc), topic.encode(), c_int(count), c_int(copies)))

        def broker_down(broker: str) -> None:
            self._err(lib.rd_kafka_mock_broker_set_down(ctypes.c_void_p(mc), ctypes.c_int32(self._broker(broker))))

        def broker_up(broker: str) -> None:
            self._err(lib.rd_kafka_mock_broker_set_up(ctypes.c_void_p(mc), ctypes.c_int32(self._broker(broker))))

        def leader(topic: str, partition: str, broker: str) -> None:
            self._err(lib.rd_kafka_mock_partition_set_leader(ctypes.c_void_p(mc), topic.encode(),
                                                             ctypes.c_int32(int(partition)),
                                                             ctypes.c_int32(self._broker(broker, every=False))))

        def rtt(broker: str, ms: str) -> None:
            self._err(lib.rd_kafka_mock_broker_set_rtt(ctypes.c_void_p(mc), ctypes.c_int32(self._broker(broker)),
                                                       c_int(int(ms))))

        def errors(api_key: str, codes: str) -> None:
            values = [int(code) for code in codes.split(",")]
            array = (c_int * len(values))(*values)
            lib.rd_kafka_mock_push_request_errors_array(ctypes.c_void_p(mc), ctypes.c_int16(int(api_key)),
                                                        ctypes.c_size_t(len(values)), array)

        def errors_clear(api_key: str) -> None:
            lib.rd_kafka_mock_clear_request_errors(ctypes.c_void_p(mc), ctypes.c_int16(int(api_key)))

        def coordinator(key: str, broker: str) -> None:
            self._err(lib.rd_kafka_mock_coordinator_set(ctypes.c_void_p(mc), c_char_p(b"group"), key.encode(),
                                                        ctypes.c_int32(self._broker(broker, every=False))))

        def setter(name: str) -> Callable[[str], None]:
            def set_(value: str) -> None:
                number = int(value)
                if number < 0:
                    raise MockError(f"{name} {number}: use 0 or more")
                getattr(lib, f"rd_kafka_mock_sharegroup_set_{_SETTERS[name]}")(ctypes.c_void_p(mc), c_int(number))
            return set_

        def named(name: str) -> Callable[[str], None]:
            function, values = _NAMED[name]

            def set_(value: str) -> None:
                if value not in values:
                    raise MockError(f"{name} {value!r}: use {' or '.join(values)}")
                getattr(lib, f"rd_kafka_mock_sharegroup_set_{function}")(ctypes.c_void_p(mc), c_int(values[value]))
            return set_

        return {"topic-create": topic_create, "broker-down": broker_down, "broker-up": broker_up, "leader": leader,
                "rtt": rtt, "errors": errors, "errors-clear": errors_clear, "coordinator": coordinator,
                **{name: setter(name) for name in _SETTERS}, **{name: named(name) for name in _NAMED}}


def main(argv: list[str] | None = None) -> int:
    import argparse
    parser = argparse.ArgumentParser(prog="python -m harness.cluster.rdmock",
                                     description="librdkafka's mock cluster, answering commands on stdin")
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--debug", default="", help="librdkafka debug contexts logged to stderr (e.g. mock,protocol)")
    args = parser.parse_args(argv)
    if not 1 <= args.brokers <= 9:
        print(f"rdmock: invalid --brokers {args.brokers}: use 1..9", file=sys.stderr)
        return 2
    try:
        cluster = MockCluster(args.brokers, debug=args.debug)
    except (MockError, OSError) as exc:
        print(f"rdmock: {exc}", file=sys.stderr)
        return 2
    def stop(*_: object) -> None:
        raise SystemExit(0)  # out of the command loop; `finally` destroys the cluster
    signal.signal(signal.SIGTERM, stop)
    try:
        print(json.dumps({"event": "ready", "bootstraps": cluster.bootstraps, "librdkafka": cluster.version}),
              flush=True)
        for line in sys.stdin:
            print(json.dumps(cluster.command(line)), flush=True)
    except (ValueError, OSError):  # stdin closed under the loop (SIGTERM)
        pass
    finally:
        cluster.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
