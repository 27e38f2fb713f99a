"""A small typed client for the Toxiproxy v2 HTTP API (stdlib only).

Toxiproxy model, as this client uses it: a *proxy* listens on one address and,
for each TCP connection accepted there, dials its upstream. Every connection
has two data streams: ``upstream`` (bytes from the connecting client towards
the upstream server) and ``downstream`` (bytes from the server back to the
client). A *toxic* is attached to one stream of one proxy and applies to the
connections open now and to every later one, until it is removed.

Verified against toxiproxy-server v2.12.0: errors come back as JSON
``{"error": ..., "status": ...}`` except unknown routes (plain-text 404);
``POST /proxies/{name}`` is deprecated in favour of ``PATCH``; a proxy created
disabled with port 0 reports ``host:0`` until it is enabled.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal

from harness.errors import Inconclusive

Stream = Literal["upstream", "downstream"]
STREAMS: tuple[Stream, Stream] = ("upstream", "downstream")
CUT_TOXIC_PREFIX = "harness_cut_"


class ToxiproxyError(Inconclusive):
    """A Toxiproxy API call failed; `status` is the HTTP status, None if unreachable."""

    def __init__(self, message: str, *, status: int | None = None, server_message: str | None = None) -> None:
        super().__init__(" ".join(message.split()))
        self.status = status
        self.server_message = server_message


@dataclass(frozen=True)
class Toxic:
    """One toxic as the server reports it."""

    name: str
    type: str
    stream: str
    toxicity: float
    attributes: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Toxic:
        return cls(
            name=str(data["name"]),
            type=str(data["type"]),
            stream=str(data.get("stream", "downstream")),
            toxicity=float(data.get("toxicity", 1.0)),
            attributes=dict(data.get("attributes") or {}),
        )


@dataclass(frozen=True)
class Proxy:
    """One proxy as the server reports it; `listen` is the actual bound address."""

    name: str
    listen: str
    upstream: str
    enabled: bool
    toxics: tuple[Toxic, ...] = ()

    @property
    def listen_host(self) -> str:
        return self.listen.rsplit(":", 1)[0].strip("[]")

    @property
    def listen_port(self) -> int:
        return int(self.listen.rsplit(":", 1)[1])

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Proxy:
        return cls(
            name=str(data["name"]),
            listen=str(data["listen"]),
            upstream=str(data["upstream"]),
            enabled=bool(data.get("enabled", True)),
            toxics=tuple(Toxic.from_json(t) for t in data.get("toxics") or ()),
        )


class ToxiproxyClient:
    """Talks to one Toxiproxy server's API, e.g. ``ToxiproxyClient("http://127.0.0.1:8474")``."""

    def __init__(self, api_url: str, timeout: float = 5.0) -> None:
        self.api_url = api_url.rstrip("/")
        self.timeout = timeout
        # Loopback API: never route it through an http_proxy from the environment.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    # -- server ---------------------------------------------------------------

    def version(self) -> str:
        """The server's version string (``"git"`` for a `go install` build)."""
        body = self._request("GET", "/version", raw=True)
        text = body.decode("utf-8", "replace").strip()
        try:
            data = json.loads(text)
        except ValueError:
            return text
        return str(data.get("version", text)) if isinstance(data, dict) else str(data)

    def reset(self) -> None:
        """Enable every proxy and remove every toxic."""
        self._request("POST", "/reset")

    # -- proxies --------------------------------------------------------------

    def create_proxy(self, name: str, listen: str, upstream: str, enabled: bool = True) -> Proxy:
        """Create a proxy; ``listen="127.0.0.1:0"`` binds a free port, reported in `Proxy.listen`."""
        body = {"name": name, "listen": listen, "upstream": upstream, "enabled": enabled}
        return Proxy.from_json(self._request("POST", "/proxies", body))

    def get_proxy(self, name: str) -> Proxy:
        return Proxy.from_json(self._request("GET", f"/proxies/{_q(name)}"))

    def list_proxies(self) -> dict[str, Proxy]:
        data = self._request("GET", "/proxies") or {}
        return {key: Proxy.from_json(value) for key, value in data.items()}

    def delete_proxy(self, name: str) -> None:
        """Delete a proxy: its listener and all its connections are closed."""
        self._request("DELETE", f"/proxies/{_q(name)}")

    def set_enabled(self, name: str, enabled: bool) -> Proxy:
        """Disabling closes the listener and every connection (clients see refused/reset)."""
        return Proxy.from_json(self._request("PATCH", f"/proxies/{_q(name)}", {"enabled": enabled}))

    # -- toxics ---------------------------------------------------------------

    def list_toxics(self, proxy: str) -> list[Toxic]:
        return [Toxic.from_json(t) for t in self._request("GET", f"/proxies/{_q(proxy)}/toxics") or ()]

    def add_toxic(
        self,
        proxy: str,
        type: str,
        stream: Stream = "downstream",
        attributes: dict[str, Any] | None = None,
        name: str | None = None,
        toxicity: float = 1.0,
    ) -> Toxic:
        """Add a toxic; without `name` the server names it ``<type>_<stream>``."""
        body: dict[str, Any] = {"type": type, "stream": stream, "toxicity": toxicity, "attributes": attributes or {}}
        if name is not None:
            body["name"] = name
        return Toxic.from_json(self._request("POST", f"/proxies/{_q(proxy)}/toxics", body))

    def remove_toxic(self, proxy: str, toxic_name: str) -> None:
        self._request("DELETE", f"/proxies/{_q(proxy)}/toxics/{_q(toxic_name)}")

    def add_latency(
        self, proxy: str, ms: int, jitter: int = 0, stream: Stream = "downstream", name: str | None = None
    ) -> Toxic:
        """Delay every chunk on `stream` by `ms` (+/- `jitter`) milliseconds."""
        return self.add_toxic(proxy, "latency", stream, {"latency": ms, "jitter": jitter}, name=name)

    def cut(self, proxy: str, streams: Iterable[Stream] = STREAMS) -> list[Toxic]:
        """Black-hole the link: bytes on `streams` are dropped, connections stay open.

        Adds a ``timeout`` toxic with ``timeout=0`` per stream (named
        ``harness_cut_<stream>``). New connections are still accepted, so
        clients see a network partition (requests time out), not a refused or
        reset connection. Bytes sent meanwhile are discarded, never delivered
        later. Idempotent.
        """
        present = {t.name for t in self.list_toxics(proxy)}
        added = []
        for stream in streams:
            name = CUT_TOXIC_PREFIX + stream
            if name not in present:
                added.append(self.add_toxic(proxy, "timeout", stream, {"timeout": 0}, name=name))
        return added

    def heal(self, proxy: str) -> None:
        """Remove the toxics `cut` added. Idempotent.

        Toxiproxy closes the connections that were open through the cut when
        the timeout toxic goes away, so clients reconnect; new connections work.
        """
        for toxic in self.list_toxics(proxy):
            if toxic.name.startswith(CUT_TOXIC_PREFIX):
                try:
                    self.remove_toxic(proxy, toxic.name)
                except ToxiproxyError as exc:
                    if exc.status != 404:
                        raise

    # -- transport ------------------------------------------------------------

    def _request(self, method: str, path: str, body: Any = None, raw: bool = False) -> Any:
        url = self.api_url + path
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                payload: bytes = response.read()
        except urllib.error.HTTPError as exc:
            message = _server_message(exc.read())
            raise ToxiproxyError(
                f"toxiproxy {method} {path} failed: HTTP {exc.code}: {message}",
                status=exc.code,
                server_message=message,
            ) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, ConnectionRefusedError):
                raise ToxiproxyError(
                    f"cannot reach toxiproxy API at {self.api_url}: connection refused (is the server running?)"
                ) from None
            raise ToxiproxyError(f"cannot reach toxiproxy API at {self.api_url}: {reason}") from None
        except TimeoutError:
            raise ToxiproxyError(
                f"toxiproxy API at {self.api_url} did not answer {method} {path} within {self.timeout:g}s"
            ) from None
        except (OSError, http.client.HTTPException) as exc:
            raise ToxiproxyError(f"toxiproxy API at {self.api_url} failed on {method} {path}: {exc!r}") from None
        if raw:
            return payload
        return json.loads(payload) if payload.strip() else None


def _q(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


def _server_message(payload: bytes) -> str:
    text = payload.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text or "(empty response)"
    if isinstance(data, dict) and "error" in data:
        return str(data["error"])
    return text
