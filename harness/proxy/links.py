"""The link map: which Toxiproxy proxy carries which directed network link.

Link names: `client->n<j>` (any client to broker j), `n<i>->n<j>` (broker i
dials broker j: replication fetches, coordinator and share-state RPCs), and
`n<i>->c<j>` (node i dials controller j: Raft and broker registration or
heartbeats). A proxy carries the TCP connections its source opens, with the
data of both directions; cutting it stops that link only.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Link:
    """One directed link and the proxy that carries it."""

    src: str  # "client" or "n<i>"
    dst: str  # "n<j>" (broker) or "c<j>" (controller)
    listen_port: int
    upstream_port: int

    @property
    def name(self) -> str:
        return f"{self.src}->{self.dst}"

    @property
    def kind(self) -> str:
        if self.src == "client":
            return "client"
        return "controller" if self.dst.startswith("c") else "broker"


class LinkMap:
    """All proxied links of a cluster, looked up by endpoints."""

    def __init__(self, links: list[Link]) -> None:
        self._by_name = {link.name: link for link in links}

    def __iter__(self):
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    def get(self, src: str, dst: str) -> Link:
        """The link src -> dst, e.g. get("n1", "n2"); KeyError names the known links."""
        name = f"{src}->{dst}"
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no proxied link {name}; known: {', '.join(sorted(self._by_name))}") from None

    def client(self, broker_id: int) -> Link:
        return self.get("client", f"n{broker_id}")

    def broker(self, src_id: int, dst_id: int) -> Link:
        return self.get(f"n{src_id}", f"n{dst_id}")

    def controller(self, src_id: int, controller_id: int) -> Link:
        return self.get(f"n{src_id}", f"c{controller_id}")

    def touching(self, node_id: int) -> list[Link]:
        """Every link into or out of node `node_id` (to isolate it)."""
        ends = {f"n{node_id}", f"c{node_id}"}
        return [link for link in self if link.src in ends or link.dst in ends]

    def names(self) -> list[str]:
        return sorted(self._by_name)
