"""Network fault injection with a real Toxiproxy server.

`find_or_build_toxiproxy` locates (or builds once) the server binary,
`ToxiproxyServer` runs it as a child process, and `ToxiproxyClient` drives its
HTTP API: proxies, toxics, and the `cut`/`heal` pair used to partition a link.
"""

from harness.proxy.client import (
    CUT_TOXIC_PREFIX,
    STREAMS,
    Proxy,
    Stream,
    Toxic,
    ToxiproxyClient,
    ToxiproxyError,
)
from harness.proxy.server import (
    DEFAULT_VERSION,
    ProcessHandle,
    Spawn,
    ToxiproxyServer,
    find_or_build_toxiproxy,
    spawn_process,
)

__all__ = [
    "CUT_TOXIC_PREFIX",
    "DEFAULT_VERSION",
    "STREAMS",
    "ProcessHandle",
    "Proxy",
    "Spawn",
    "Stream",
    "Toxic",
    "ToxiproxyClient",
    "ToxiproxyError",
    "ToxiproxyServer",
    "find_or_build_toxiproxy",
    "spawn_process",
]
