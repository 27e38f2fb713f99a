"""Toxiproxy for a local cluster: its server process, its client, and one proxy per directed link.

`ProxyLinks.start` runs the Toxiproxy server (a managed child, log in the run's logs/);
`wire` creates a proxy for every link of the port plan; `cut`, `heal` and `heal_all` act on them;
`stop` stops the server. Which links exist and on which ports is `harness.cluster.local.spec`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from harness.kafka import config as kconfig
from harness.proxy import server as proxy_server
from harness.proxy.client import ToxiproxyClient
from harness.proxy.links import Link, LinkMap
from harness.proxy.server import ToxiproxyServer
from harness.sys.paths import cache_dir
from harness.sys.procs import spawn


class ProxyLinks:
    """A cluster's Toxiproxy and its links; nothing runs until `start`."""

    def __init__(self) -> None:
        self.links = LinkMap([])
        self.server: ToxiproxyServer | None = None
        self.client: ToxiproxyClient | None = None

    def start(self, claim_port: Callable[[], int], log_path: Path) -> None:
        """Find (or build) Toxiproxy, take its API port from `claim_port`, start it and connect."""

        binary = proxy_server.find_or_build_toxiproxy(cache_dir())
        self.server = ToxiproxyServer(spawn=lambda argv, log: spawn("toxiproxy", argv, log_path=log))
        port = claim_port()
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.server.start(binary, port=port, log_path=log_path)
        self.client = ToxiproxyClient(self.server.api_url)

    def wire(self, links: list[Link]) -> None:
        """One proxy per link, listening on its port and forwarding to the node's real listener."""
        self.links = LinkMap(links)
        for link in links:
            self.client.create_proxy(link.name, f"{kconfig.HOST}:{link.listen_port}",
                                     f"{kconfig.HOST}:{link.upstream_port}")

    def cut(self, link_name: str) -> None:
        self.links.get(*link_name.split("->"))  # an unknown link is refused before Toxiproxy is asked
        self.client.cut(link_name)

    def heal(self, link_name: str) -> None:
        self.client.heal(link_name)

    def heal_all(self) -> None:
        self.client.reset()

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
