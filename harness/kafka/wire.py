"""The few bytes of the Kafka protocol the harness speaks itself: an ApiVersions probe, a Metadata
read of leader epochs, and a FindCoordinator that makes the brokers create their coordinators' topics.

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


def addresses(bootstrap: str) -> list[tuple[str, int]]:
    """(host, port) of each `host:port` of a bootstrap list (an IPv6 literal's brackets dropped);
    ValueError for an entry without a numeric port."""
    out = []
    for entry in bootstrap.split(","):
        host, _, port = entry.strip().rpartition(":")
        out.append((host.strip("[]"), int(port)))
    return out


#: FindCoordinator key types (KIP-932 added SHARE, from request version 6).
GROUP_COORDINATOR, SHARE_COORDINATOR = 0, 2
#: the largest answer to a FindCoordinator of a few keys a broker could send (a peer that says more is
#: not one)
MAX_COORDINATOR_RESPONSE = 1 << 20


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _compact_string(text: str) -> bytes:
    raw = text.encode()
    return _uvarint(len(raw) + 1) + raw


def find_coordinator_request(key_type: int, keys: list[str], correlation_id: int) -> bytes:
    """FindCoordinator v6 (request header v2, both flexible) for `keys` of `key_type`, framed."""
    client = b"ksh-warm"
    header = struct.pack(">hhih", 10, 6, correlation_id, len(client)) + client + b"\x00"  # no tagged fields
    body = (struct.pack(">b", key_type) + _uvarint(len(keys) + 1) + b"".join(map(_compact_string, keys))
            + b"\x00")
    return struct.pack(">i", len(header) + len(body)) + header + body


class _CompactReader(_Reader):
    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.take(">B")
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    def compact_string(self) -> str | None:
        n = self.uvarint() - 1
        if n < 0:
            return None
        text = self.data[self.at:self.at + n].decode()
        self.at += n
        return text

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            size = self.uvarint()  # read before `self.at` is: `self.at += self.uvarint()` loses the varint
            self.at += size


def parse_find_coordinator(payload: bytes) -> dict[str, tuple[int, int]]:
    """A FindCoordinator v6 response body (after the length) -> {key: (node id, error code)}."""
    r = _CompactReader(payload)
    r.take(">i")  # correlation id
    r.skip_tags()  # response header v1
    r.take(">i")  # throttle time
    found = {}
    for _ in range(r.uvarint() - 1):
        key = r.compact_string() or ""
        node = r.take(">i")
        r.compact_string(), r.take(">i")  # host, port
        error = r.take(">h")
        r.compact_string()  # error message
        r.skip_tags()
        found[key] = (node, error)
    return found


def find_coordinators(port: int, key_type: int, keys: list[str], timeout: float = 5.0,
                      host: str = "127.0.0.1") -> dict[str, tuple[int, int]]:
    """{key: (coordinator node id, error code)} from the broker at `port`. A broker whose coordinator topic
    (`__consumer_offsets`, `__share_group_state`) does not exist yet asks its controller to create it and
    answers COORDINATOR_NOT_AVAILABLE (15): the request is how a client makes those topics. OSError or
    ValueError if the broker does not answer in time or answers nonsense."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(find_coordinator_request(key_type, keys, 13))
        size = struct.unpack(">i", _recv_exactly(sock, 4))[0]
        if not 0 < size <= MAX_COORDINATOR_RESPONSE:  # not a Kafka broker's answer to this request
            raise ValueError(f"FindCoordinator: a response of {size} bytes")
        try:
            return parse_find_coordinator(_recv_exactly(sock, size))
        except (struct.error, UnicodeDecodeError) as exc:
            raise ValueError(f"FindCoordinator: malformed response ({exc})") from exc


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionResetError("the broker closed the connection")
        out += chunk
    return out


def api_versions_answer(port: int, version: int, timeout: float = 3.0, host: str = "127.0.0.1") -> bytes:
    """The body (after the correlation id) of the answer to an ApiVersions request of `version` (3 and later:
    flexible, with this client's software name and version). Kafka answers a version it does not serve with
    ApiVersionsResponse v0 and error UNSUPPORTED_VERSION (35): the client retries with a version named there."""
    client = b"ksh-probe"
    flexible = version >= 3
    header = struct.pack(">hhih", 18, version, 11, len(client)) + client + (b"\x00" if flexible else b"")
    body = (_compact_string("ksh") + _compact_string("1.0") + b"\x00") if flexible else b""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
        size = struct.unpack(">i", _recv_exactly(sock, 4))[0]
        if not 4 <= size <= MAX_COORDINATOR_RESPONSE:
            raise ValueError(f"ApiVersions: a response of {size} bytes")
        return _recv_exactly(sock, size)[4:]


def v0_unsupported_answer(body: bytes) -> bool:
    """Whether `body` is what Kafka answers an ApiVersions version it does not serve: ApiVersionsResponse v0
    (error code 35, then a 4-byte count of (api key, min, max) entries, nothing after them)."""
    if len(body) < 6:
        return False
    error, count = struct.unpack(">hi", body[:6])
    return error == 35 and count >= 1 and len(body) == 6 + 6 * count
