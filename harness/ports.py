"""Loopback TCP ports for brokers, listeners and proxies."""

from __future__ import annotations

import socket
import threading

from harness.errors import HarnessError

_taken: set[int] = set()
_lock = threading.Lock()


def is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True if nothing listens on host:port right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def allocate(count: int, base: int | None = None, host: str = "127.0.0.1") -> list[int]:
    """`count` distinct free ports: ephemeral ones, or `base`, `base+1`, ... if given.

    With a base, a port in use is a user error (one line naming the fix);
    ports handed out earlier in this process are never handed out again.
    """
    ports: list[int] = []
    with _lock:
        if base is not None:
            if not 1 <= base or base + count - 1 > 65535:
                raise HarnessError(f"invalid base port {base}: {count} ports from it must fit in 1..65535")
            for port in range(base, base + count):
                if port in _taken or not is_free(port, host):
                    raise HarnessError(f"port {port} is in use: choose another --base-port or stop what listens there")
                ports.append(port)
        else:
            while len(ports) < count:
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                    sock.bind((host, 0))
                    port = sock.getsockname()[1]
                if port not in _taken and port not in ports:
                    ports.append(port)
        _taken.update(ports)
    return ports
