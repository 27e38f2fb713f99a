"""The few bytes of the Kafka protocol the harness speaks itself: an ApiVersions probe.

Used to prove a listener answers (a node is serving; a healed link carries
requests again) and that a link is cut (the request times out) or resets.
"""

from __future__ import annotations

import socket
import struct
import time


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
