"""The few bytes of the Kafka protocol the harness speaks itself: an ApiVersions probe, and a Metadata
read of leader epochs.

The probe proves a listener answers (a node is serving; a healed link carries
requests again) and that a link is cut (the request times out) or resets.
`leader_epochs` reads what the Admin API does not report: each partition's
leader and leader epoch (Metadata v7, the first version with the epoch; 4.x
still serves it), as proof of a leadership change or of its absence.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass


def _api_versions_request(correlation_id: int) -> bytes:
    client = b"ksh-probe"
    body = struct.pack(">hhih", 18, 0, correlation_id, len(client)) + client  # ApiVersions v0, header v1
    return struct.pack(">i", len(body)) + body


def probe(port: int, timeout: float = 1.5, host: str = "127.0.0.1") -> tuple[str, float]:
    """Send ApiVersions through `port`; ("answered", seconds) or ("timeout" | "reset" | "refused", seconds).

    A cut link (Toxiproxy timeout toxic) accepts the connection and drops the bytes,
    so the request times out; a healed link answers within milliseconds.
    """
    started = time.monotonic()
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(_api_versions_request(7))
            header = b""
            while len(header) < 8:
                chunk = sock.recv(8 - len(header))
                if not chunk:
                    return "reset", time.monotonic() - started
                header += chunk
            size, correlation = struct.unpack(">ii", header)
            return ("answered" if correlation == 7 and size > 4 else "reset"), time.monotonic() - started
    except ConnectionRefusedError:
        return "refused", time.monotonic() - started
    except (ConnectionResetError, BrokenPipeError):
        return "reset", time.monotonic() - started
    except (socket.timeout, TimeoutError):
        return "timeout", time.monotonic() - started


def connection_reset_after(port: int, wait: float = 3.0, host: str = "127.0.0.1") -> float | None:
    """Open a connection, make one request, then wait: seconds until the peer reset or closed it, else None.

    A broker never closes an idle connection within seconds, so a close proves a reset_peer toxic.
    """
    started = time.monotonic()
    try:
        with socket.create_connection((host, port), timeout=wait) as sock:
            sock.settimeout(wait)
            sock.sendall(_api_versions_request(9))
            while time.monotonic() - started < wait:
                if not sock.recv(65536):
                    return time.monotonic() - started
    except (ConnectionResetError, BrokenPipeError, ConnectionRefusedError):
        return time.monotonic() - started
    except (socket.timeout, TimeoutError):
        return None
    return None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, fmt: str):
        value = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return value[0] if len(value) == 1 else value

    def string(self) -> str | None:
        n = self.take(">h")
        if n < 0:
            return None
        text = self.data[self.at:self.at + n].decode()
        self.at += n
        return text

    def ints(self) -> list[int]:
        return [self.take(">i") for _ in range(max(0, self.take(">i")))]


def metadata_request(topic: str, correlation_id: int) -> bytes:
    """Metadata v7 for one topic (request header v1), framed."""
    client, name = b"ksh-meta", topic.encode()
    body = (struct.pack(">hhih", 3, 7, correlation_id, len(client)) + client
            + struct.pack(">ih", 1, len(name)) + name + b"\x00")  # no auto-creation
    return struct.pack(">i", len(body)) + body


@dataclass(frozen=True)
class PartitionMeta:
    """One partition as a Metadata v7 response describes it."""

    leader: int
    epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...]  # replicas whose log directory is offline (a failed disk)


def parse_metadata(payload: bytes, topic: str) -> dict[int, PartitionMeta]:
    """A Metadata v7 response body (after the length) -> {partition: PartitionMeta} of `topic`;
    ValueError if the topic is missing or in error."""
    r = _Reader(payload)
    r.take(">i")  # correlation id
    r.take(">i")  # throttle time
    for _ in range(r.take(">i")):  # brokers
        r.take(">i"), r.string(), r.take(">i"), r.string()
    r.string()  # cluster id
    r.take(">i")  # controller id
    for _ in range(r.take(">i")):
        error, name, _internal = r.take(">h"), r.string(), r.take(">b")
        parts = {}
        for _ in range(r.take(">i")):
            _perror, index, leader, epoch = r.take(">hiii")
            replicas, isr, offline = r.ints(), r.ints(), r.ints()
            parts[index] = PartitionMeta(leader, epoch, tuple(replicas), tuple(isr), tuple(offline))
        if name == topic:
            if error:
                raise ValueError(f"Metadata for {topic}: error code {error}")
            return parts
    raise ValueError(f"Metadata has no topic {topic}")


def parse_leader_epochs(payload: bytes, topic: str) -> dict[int, tuple[int, int]]:
    """A Metadata v7 response body -> {partition: (leader id, leader epoch)} of `topic` (`parse_metadata`)."""
    return {p: (m.leader, m.epoch) for p, m in parse_metadata(payload, topic).items()}


def partition_metadata(port: int, topic: str, timeout: float = 5.0,
                       host: str = "127.0.0.1") -> dict[int, PartitionMeta]:
    """{partition: PartitionMeta} of `topic` as the broker at `port` reports it; OSError or ValueError if
    it does not answer in time or answers nonsense."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(metadata_request(topic, 11))
        size = struct.unpack(">i", _recv_exactly(sock, 4))[0]
        return parse_metadata(_recv_exactly(sock, size), topic)


def leader_epochs(port: int, topic: str, timeout: float = 5.0,
                  host: str = "127.0.0.1") -> dict[int, tuple[int, int]]:
    """{partition: (leader id, leader epoch)} of `topic` as the broker at `port` reports it; OSError or
    ValueError if it does not answer in time or answers nonsense."""
    return {p: (m.leader, m.epoch) for p, m in partition_metadata(port, topic, timeout, host).items()}


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionResetError("the broker closed the connection")
        out += chunk
    return out
