"""Tests of `harness.proxy` against a REAL toxiproxy-server and real loopback sockets.

The binary comes from `find_or_build_toxiproxy` (honours TOXIPROXY_SERVER; else
it is built once into a temporary cache, which needs Go). Waits are conditions
with deadlines; the only fixed wait is the socket timeout that proves a cut
link delivers nothing.
"""

from __future__ import annotations

import os
import socket
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, Sequence

import pytest

from harness.errors import HarnessError
from harness.proxy import (Proxy, ToxiproxyClient, ToxiproxyError, ToxiproxyServer, find_or_build_toxiproxy,
                           spawn_process)

CUT_PROBE_TIMEOUT = 1.0
REPO = Path(__file__).resolve().parents[2]


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)


class _EchoServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True


def _alive(pid: int) -> bool:
    """True if `pid` exists and is not a zombie (an unreaped corpse counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def _round_trip(proxy: Proxy, payload: bytes = b"ping", timeout: float = 5.0) -> bytes:
    with socket.create_connection((proxy.listen_host, proxy.listen_port), timeout=timeout) as sock:
        return _exchange(sock, payload)


def _exchange(sock: socket.socket, payload: bytes) -> bytes:
    sock.sendall(payload)
    received = b""
    while len(received) < len(payload):
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed by peer")
        received += chunk
    return received


def _refused(proxy: Proxy) -> bool:
    try:
        socket.create_connection((proxy.listen_host, proxy.listen_port), timeout=1.0).close()
    except ConnectionRefusedError:
        return True
    return False


@pytest.fixture(scope="module")
def binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return find_or_build_toxiproxy(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def server(binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ToxiproxyServer]:
    log = tmp_path_factory.mktemp("toxiproxy") / "server.log"
    with ToxiproxyServer().start(binary, log_path=log) as srv:
        yield srv


@pytest.fixture
def client(server: ToxiproxyServer) -> Iterator[ToxiproxyClient]:
    api = server.client()
    yield api
    for name in api.list_proxies():
        api.delete_proxy(name)


@pytest.fixture(scope="module")
def echo() -> Iterator[str]:
    srv = _EchoServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.mark.real
def test_echo_cut_heal_and_second_proxy(client: ToxiproxyClient, echo: str) -> None:
    proxy = client.create_proxy("a", "127.0.0.1:0", echo)
    other = client.create_proxy("b", "127.0.0.1:0", echo)
    assert proxy.listen_port != 0 and proxy.enabled
    assert _round_trip(proxy) == b"ping"

    held = socket.create_connection((proxy.listen_host, proxy.listen_port), timeout=CUT_PROBE_TIMEOUT)
    try:
        assert _exchange(held, b"before") == b"before"
        added = client.cut("a")
        assert {t.stream for t in added} == {"upstream", "downstream"}
        assert client.cut("a") == []  # idempotent
        with pytest.raises(socket.timeout):  # an open connection goes silent
            _exchange(held, b"during")
        with pytest.raises(socket.timeout):  # a new one connects but nothing crosses
            _round_trip(proxy, timeout=CUT_PROBE_TIMEOUT)
        assert _round_trip(other) == b"ping"  # same upstream, other link: unaffected

        client.heal("a")
        client.heal("a")  # idempotent
        assert client.get_proxy("a").toxics == ()
        assert _round_trip(proxy) == b"ping"
        held.settimeout(5.0)  # toxiproxy closes connections that lived through the cut
        assert held.recv(1024) == b""
    finally:
        held.close()


@pytest.mark.real
def test_latency_delays_round_trip(client: ToxiproxyClient, echo: str) -> None:
    proxy = client.create_proxy("lat", "127.0.0.1:0", echo)
    toxic = client.add_latency("lat", 300)
    assert (toxic.type, toxic.stream, toxic.attributes["latency"]) == ("latency", "downstream", 300)
    started = time.perf_counter()
    assert _round_trip(proxy) == b"ping"
    assert time.perf_counter() - started >= 0.3
    client.remove_toxic("lat", toxic.name)
    assert client.list_toxics("lat") == []


@pytest.mark.real
def test_proxy_crud_disable_reset_and_errors(client: ToxiproxyClient, echo: str) -> None:
    proxy = client.create_proxy("crud", "127.0.0.1:0", echo)
    assert client.version()
    assert client.list_proxies() == {"crud": client.get_proxy("crud")}
    with pytest.raises(ToxiproxyError) as exc:
        client.create_proxy("crud", "127.0.0.1:0", echo)
    assert exc.value.status == 409 and "already exists" in str(exc.value)

    assert not client.set_enabled("crud", False).enabled
    _wait_for(lambda: _refused(proxy), "disabled proxy to refuse connections")
    client.add_toxic("crud", "timeout", "upstream", {"timeout": 0})
    client.reset()
    after = client.get_proxy("crud")
    assert after.enabled and after.toxics == () and after.listen == proxy.listen
    assert _round_trip(after) == b"ping"

    client.delete_proxy("crud")
    _wait_for(lambda: _refused(proxy), "deleted proxy's listener to close")
    with pytest.raises(ToxiproxyError) as exc:
        client.get_proxy("crud")
    assert exc.value.status == 404 and "proxy not found" in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.real
def test_stop_kills_server_and_unreachable_api_is_named(binary: Path, tmp_path: Path) -> None:
    calls: list[Sequence[str]] = []

    def spawn(argv: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
        calls.append(argv)
        return spawn_process(argv, log)

    srv = ToxiproxyServer(spawn=spawn).start(binary, log_path=tmp_path / "log")
    pid, url = srv.pid, srv.api_url
    assert calls and _alive(pid) and ToxiproxyClient(url).version()
    srv.stop()
    srv.stop()  # idempotent
    assert not _alive(pid)
    with pytest.raises(ToxiproxyError, match=f"cannot reach toxiproxy API at {url}: connection refused"):
        ToxiproxyClient(url).version()


@pytest.mark.real
def test_port_in_use_and_early_exit(binary: Path, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(HarnessError, match=f"port {port} is in use"):
            ToxiproxyServer().start(binary, port=port)
    with pytest.raises(HarnessError, match="exited early with code 1"):
        ToxiproxyServer().start(Path("/bin/false"), log_path=tmp_path / "false.log")


@pytest.mark.real
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_server_dies_with_its_parent(binary: Path, tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from harness.proxy import ToxiproxyServer\n"
        "srv = ToxiproxyServer().start(Path(sys.argv[1]), log_path=Path(sys.argv[2]))\n"
        "print(srv.pid, flush=True); sys.stdin.read()\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    parent = subprocess.Popen(
        [sys.executable, "-c", code, str(binary), str(tmp_path / "log")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        assert _alive(pid)
    finally:
        parent.kill()
        parent.wait()
    _wait_for(lambda: not _alive(pid), f"toxiproxy pid {pid} to die with its parent")


def test_missing_env_binary_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TOXIPROXY_SERVER", str(tmp_path / "nope"))
    with pytest.raises(HarnessError) as exc:
        find_or_build_toxiproxy(tmp_path / "cache")
    assert "TOXIPROXY_SERVER" in str(exc.value) and "\n" not in str(exc.value)


def test_no_go_names_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.delenv("TOXIPROXY_SERVER", raising=False)
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(HarnessError) as exc:
        find_or_build_toxiproxy(tmp_path / "fresh-cache")
    message = str(exc.value)
    assert "\n" not in message and "install Go" in message and "TOXIPROXY_SERVER" in message
