"""Loopback TCP ports for brokers, listeners and proxies, never handed out twice on this machine.

A port picked by binding port 0 is in the kernel's ephemeral range: the kernel
hands it to the next outgoing connection, and every other process picking the
same way may pick it too, in the seconds before the JVM binds it. So ports are
allocated *outside* the ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range`)
through a registry shared by every harness process of the user on the machine: a
directory of lock files, one per block of `BLOCK` ports (`<registry>/block-<first port>.lock`).
The registry is the user's own (`<tmp>/ksh-ports-<uid>`, 0700, refused when another user owns it
or may write to it; lock files 0600, never opened through a symbolic link): a registry every user
could write to let any local user block every run (its lock files taken, or made unreadable).
A process owns a block while it holds an exclusive `flock` on its file; the
kernel drops the lock when the fd closes, so a process that dies (even by
SIGKILL) leaves no stale reservation. Ports are handed out from owned blocks,
each checked free by a bind at that moment; `release` gives them back, and a
block whose ports are all released is unlocked for other processes.

Explicit ports (`base`) take the blocks they fall in the same way, so a base
port can never be one another harness process holds.
"""

from __future__ import annotations

import errno
import fcntl
import os
import random
import socket
import stat
import tempfile
import threading
from pathlib import Path

from harness.errors import HarnessError

BLOCK = 32  #: ports per registry block (one lock file)
_LOWEST = 20000  #: allocation starts here below the ephemeral range (well-known service ports stay clear)
_DEFAULT_EPHEMERAL = (32768, 60999)

_lock = threading.Lock()
_blocks: dict[int, int] = {}  # first port of an owned block -> fd holding its flock
_taken: set[int] = set()  # ports handed out by this process and not released


def registry_dir() -> Path:
    """The registry: `$KSH_PORTS_DIR` (the user's choice, taken as it is; created 0700 if missing),
    else `<tmp>/ksh-ports-<uid>`, the user's own: created 0700, and refused (one line) when it is not
    a directory, another user owns it, or its group or others may write to it."""
    configured = os.environ.get("KSH_PORTS_DIR")
    if configured:
        path = Path(configured)
        if not path.is_dir():
            try:
                path.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as exc:
                raise HarnessError(f"cannot create the port registry {path}: {exc.strerror}; "
                                   "set KSH_PORTS_DIR to a writable directory") from None
        return path
    uid = os.getuid()
    path = Path(tempfile.gettempdir()) / f"ksh-ports-{uid}"
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise HarnessError(f"cannot create the port registry {path}: {exc.strerror}; "
                           "set KSH_PORTS_DIR to a directory of your own") from None
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise HarnessError(f"cannot read the port registry {path}: {exc.strerror}; "
                           "set KSH_PORTS_DIR to a directory of your own") from None
    problem = ("is not a directory" if not stat.S_ISDIR(st.st_mode) else  # a symbolic link too
               f"is owned by uid {st.st_uid}, not {uid}" if st.st_uid != uid else
               f"is writable by its group or others (mode {stat.S_IMODE(st.st_mode):04o})"
               if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) else None)
    if problem:
        raise HarnessError(f"refusing the port registry {path}: it {problem}, so another user could block "
                           "or steal this user's ports; set KSH_PORTS_DIR to a directory of your own")
    return path


def ephemeral_range() -> tuple[int, int]:
    """The kernel's ephemeral port range (Linux), or its default where it cannot be read."""
    try:
        low, high = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        if 1 <= low <= high <= 65535:
            return low, high
    except (OSError, ValueError):
        pass
    return _DEFAULT_EPHEMERAL


def candidate_blocks() -> list[int]:
    """First ports of the blocks allocation may use: every whole block outside the ephemeral range,
    from `_LOWEST` up (the whole unprivileged range if too little is left outside it)."""
    low, high = ephemeral_range()

    def outside(start: int) -> bool:
        return start + BLOCK - 1 < low or start > high

    starts = [s for s in range(_first_block(_LOWEST), 65536 - BLOCK + 1, BLOCK)]
    chosen = [s for s in starts if outside(s)]
    return chosen if len(chosen) >= 16 else [s for s in range(_first_block(1024), 65536 - BLOCK + 1, BLOCK)]


def _first_block(port: int) -> int:
    return -(-port // BLOCK) * BLOCK


def is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True if nothing listens on host:port right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _try_lock_block(start: int) -> bool:
    """Own block `start` (non-blocking); False if another process owns it. Caller holds `_lock`."""
    if start in _blocks:
        return True
    path = registry_dir() / f"block-{start}.lock"
    try:  # never through a symbolic link: a link planted there would have us create or lock another file
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except PermissionError:  # created by another user of a shared KSH_PORTS_DIR: a read fd locks too
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:  # not readable either: counted as held (never a port two users share)
            return False
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a symbolic link: not a block this process can own
            return False
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    _blocks[start] = fd
    return True


def _drop_unused_blocks() -> None:
    """Unlock owned blocks none of whose ports are handed out. Caller holds `_lock`."""
    for start in [s for s in _blocks if not any(p in _taken for p in range(s, s + BLOCK))]:
        os.close(_blocks.pop(start))


def _block_of(port: int) -> int:
    return port // BLOCK * BLOCK


def allocate(count: int, base: int | None = None, host: str = "127.0.0.1") -> list[int]:
    """`count` distinct free ports from the registry, or `base`, `base+1`, ... if given.

    With a base, a port in use (listened on, or held by another harness process) is a user
    error: one line naming the fix. A port handed out is never handed out again, by this
    process or another, until it is `release`d (or its process exits).
    """
    if count < 0:
        raise ValueError(f"cannot allocate {count} ports")
    if base is not None:
        validate_base(base, count)
    with _lock:
        if base is not None:
            return _allocate_base(count, base, host)
        return _allocate_any(count, host)


def validate_base(base: int, count: int) -> None:
    """A one-line error unless `count` ports from `base` fit in 1..65535."""
    if not isinstance(base, int) or base < 1 or base + count - 1 > 65535:
        raise HarnessError(f"invalid base port {base}: {count} ports from it must fit in 1..65535")


def _allocate_base(count: int, base: int, host: str) -> list[int]:
    ports = list(range(base, base + count))
    locked: list[int] = []
    try:
        for port in ports:
            block = _block_of(port)
            if block not in _blocks:
                if not _try_lock_block(block):
                    raise HarnessError(f"port {port} is in use (held by another harness process): choose another "
                                       "--base-port or wait for that run to finish")
                locked.append(block)
            if port in _taken or not is_free(port, host):
                raise HarnessError(f"port {port} is in use: choose another --base-port or stop what listens there")
    except BaseException:
        for block in locked:
            if not any(p in _taken for p in range(block, block + BLOCK)):
                os.close(_blocks.pop(block))
        raise
    _taken.update(ports)
    return ports


def _allocate_any(count: int, host: str) -> list[int]:
    ports: list[int] = []

    def take_from(block: int) -> None:
        for port in range(block, block + BLOCK):
            if len(ports) == count:
                return
            if port not in _taken and port not in ports and is_free(port, host):
                ports.append(port)

    for block in sorted(_blocks):
        take_from(block)
    if len(ports) < count:
        candidates = candidate_blocks()
        first = random.randrange(len(candidates))  # processes start apart: few contended lock attempts
        for block in candidates[first:] + candidates[:first]:
            if len(ports) == count:
                break
            if block not in _blocks and _try_lock_block(block):
                take_from(block)
    if len(ports) < count:
        _drop_unused_blocks()
        raise HarnessError(f"no {count} free ports left outside the ephemeral range: stop other harness runs "
                           f"(their reservations are in {registry_dir()})")
    _taken.update(ports)
    _drop_unused_blocks()  # blocks locked on the way whose ports were all busy
    return ports


def release(ports) -> None:
    """Give `ports` back (unknown ones are ignored); blocks left unused are freed for other processes."""
    with _lock:
        _taken.difference_update(ports)
        _drop_unused_blocks()


def held_ports() -> set[int]:
    """Ports this process has handed out and not released."""
    with _lock:
        return set(_taken)


def _after_fork_in_child() -> None:
    """A forked child owns nothing: its copies of the lock fds are closed (the parent keeps its locks)."""
    global _lock
    _lock = threading.Lock()
    for fd in _blocks.values():
        try:
            os.close(fd)
        except OSError:
            pass
    _blocks.clear()
    _taken.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)
