"""The link map: which Toxiproxy proxy carries which directed network link.

Link names: `client->n<j>` (the producer, admin and any client without a
lane, to broker j), `lane<k>->n<j>` (consumers on lane k to broker j),
`n<i>->n<j>` (broker i
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

    src: str  # "client", "lane<k>" or "n<i>"
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
        if self.src.startswith("lane"):
            return "lane"
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

    def lane(self, lane: int, broker_id: int) -> Link:
        return self.get(f"lane{lane}", f"n{broker_id}")

    def broker(self, src_id: int, dst_id: int) -> Link:
        return self.get(f"n{src_id}", f"n{dst_id}")

    def controller(self, src_id: int, controller_id: int) -> Link:
        return self.get(f"n{src_id}", f"c{controller_id}")

    def touching(self, node_id: int) -> list[Link]:
        """Every link between node `node_id` and another node (client and lane links excluded)."""
        ends = {f"n{node_id}", f"c{node_id}"}
        return [link for link in self if link.kind in ("broker", "controller") and (link.src in ends or link.dst in ends)]

    def between(self, side_a: set[int], side_b: set[int]) -> list[Link]:
        """Every node-to-node link from one side to the other, both directions (a network split)."""
        def node(end: str) -> int:
            return int(end[1:])
        return [link for link in self if link.kind in ("broker", "controller")
                and ((node(link.src) in side_a and node(link.dst) in side_b)
                     or (node(link.src) in side_b and node(link.dst) in side_a))]

    def names(self) -> list[str]:
        return sorted(self._by_name)
