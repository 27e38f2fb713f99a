"""What a local cluster is made of: its spec, each node's roles, and the layout of its ports.

`LocalClusterSpec` says how many brokers, controllers and consumer lanes, and checks every value
before anything starts. `port_count` is how many ports the cluster takes; `plan_ports` deals a
block of that many ports (less Toxiproxy's API, taken first) out to every node's listeners and
to one Toxiproxy link per directed connection. No process and no file here: only numbers.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from typing import Iterator

from harness.errors import HarnessError
from harness.kafka import config as kconfig
from harness.proxy.links import Link
from harness.sys.ports import validate_base


@dataclass(frozen=True)
class LocalClusterSpec:
    """How to build a local cluster. Brokers are 1..brokers; separate controllers follow."""

    version: str
    brokers: int = 3
    controllers: int = 0  # 0: every broker is also a controller (combined mode)
    heap_mb: int = 512
    replication_factor: int = 3
    min_insync_replicas: int = 2
    internal_partitions: int = 5
    consumer_lanes: int = 3  # consumer i connects on lane i % lanes (its own listener and proxies)
    base_port: int | None = None
    kafka_home: str | None = None
    broker_overrides: dict[str, str] = field(default_factory=dict)
    #: seconds for nodes to serve after a start or restart: a restart of the session cluster recovers every log it
    #: holds (hundreds of partitions late in a CI run), which took 100 s on a loaded two-core host (a cold restart)
    start_timeout: float = 180.0
    sasl_users: dict[str, str] = field(default_factory=dict)  # user -> password: a SASL/PLAIN listener and ACLs
    #: log directories per broker (`data/disk<k>`); with 2 or more (JBOD) the metadata log has its own
    #: (`data/meta`), so one disk can fail without halting the broker (the `disk-fail` fault)
    log_dirs: int = 2

    def validate(self) -> None:
        if self.brokers < 1:
            raise HarnessError(f"invalid broker count {self.brokers}: use 1 or more")
        if not 1 <= self.replication_factor <= self.brokers:
            raise HarnessError(f"invalid replication factor {self.replication_factor}: use 1..{self.brokers} (the broker count)")
        if not 1 <= self.min_insync_replicas <= self.replication_factor:
            raise HarnessError(f"invalid min.insync.replicas {self.min_insync_replicas}: use 1..{self.replication_factor}")
        if not 0 <= self.consumer_lanes <= 16:
            raise HarnessError(f"invalid consumer lanes {self.consumer_lanes}: use 0..16")
        if self.heap_mb < 128:
            raise HarnessError(f"invalid heap {self.heap_mb} MB: use 128 or more")
        for user, password in self.sasl_users.items():
            if not re.fullmatch(r"[A-Za-z0-9_-]+", user) or not re.fullmatch(r"[A-Za-z0-9_.-]+", password):
                raise HarnessError(f"invalid SASL user {user!r}: use letters, digits, _ and - (passwords also .)")
        if not 1 <= self.log_dirs <= 4:
            raise HarnessError(f"invalid log directory count {self.log_dirs}: use 1..4")
        if self.controllers < 0:
            raise HarnessError(f"invalid controller count {self.controllers}: use 0 (combined mode) or more")
        if self.base_port is not None:
            validate_base(self.base_port, self.port_count())  # before any download or process

    def port_count(self) -> int:
        """Ports the cluster takes: Toxiproxy's API, every node's listeners, one proxy per link."""
        b, lanes, sasl = self.brokers, self.consumer_lanes, int(bool(self.sasl_users))
        controllers = b if self.controllers == 0 else self.controllers
        nodes = b + self.controllers
        listeners = b * (1 + b + lanes + sasl) + controllers
        links = b * (1 + lanes) + b * (b - 1) + controllers * (nodes - 1)
        return 1 + listeners + links


def random_sasl_users(*names: str) -> dict[str, str]:
    """SASL/PLAIN users `names`, each with a fresh random password (name -> password), for one run.

    The passwords come from `secrets` (the operating system's random source), never from the run's
    seeded RNG: a seed is printed in every reproduce command and report, so a password drawn from it
    would be known to whoever read the seed. A run that is reproduced gets other passwords, which
    changes nothing it checks."""
    return {name: secrets.token_urlsafe(24) for name in names}  # 32 characters of [A-Za-z0-9_-]


def node_roles(spec: LocalClusterSpec) -> dict[int, tuple[str, ...]]:
    """Node id -> its roles: brokers 1..brokers (also controllers in combined mode), then controllers."""
    b, c = spec.brokers, spec.controllers
    roles = {i: ("broker", "controller") if c == 0 else ("broker",) for i in range(1, b + 1)}
    roles.update({i: ("controller",) for i in range(b + 1, b + c + 1)})
    return roles


def with_role(roles: dict[int, tuple[str, ...]], role: str) -> list[int]:
    """The ids of the nodes that have `role`, in node order."""
    return [i for i, r in roles.items() if role in r]


@dataclass(frozen=True)
class PortPlan:
    """Where everything listens: each node's real listeners, and the Toxiproxy links in front of them."""

    roles: dict[int, tuple[str, ...]]
    real: dict[int, kconfig.NodePorts]
    links: list[Link]

    @property
    def brokers(self) -> list[int]:
        return with_role(self.roles, "broker")

    @property
    def controllers(self) -> list[int]:
        return with_role(self.roles, "controller")


def plan_ports(spec: LocalClusterSpec, allocated: list[int]) -> PortPlan:
    """Deal `allocated` (`spec.port_count() - 1` ports) out: first every node's listeners, then the links."""
    roles = node_roles(spec)
    ports = iter(allocated)
    real = _listeners(spec, roles, ports)
    return PortPlan(roles, real, _links(spec, roles, real, ports))


def _listeners(spec: LocalClusterSpec, roles: dict[int, tuple[str, ...]],
               ports: Iterator[int]) -> dict[int, kconfig.NodePorts]:
    """Each node's real listeners: client, one per peer broker, controller, one per lane, SASL."""
    brokers, controllers = with_role(roles, "broker"), with_role(roles, "controller")
    lanes = range(spec.consumer_lanes)
    sasl = bool(spec.sasl_users)
    return {i: kconfig.NodePorts(
        client=next(ports) if i in brokers else None,
        peers={k: next(ports) for k in brokers} if i in brokers else {},
        controller=next(ports) if i in controllers else None,
        lanes={k: next(ports) for k in lanes} if i in brokers else {},
        sasl=next(ports) if sasl and i in brokers else None) for i in roles}


def _links(spec: LocalClusterSpec, roles: dict[int, tuple[str, ...]], real: dict[int, kconfig.NodePorts],
           ports: Iterator[int]) -> list[Link]:
    """One proxied link per directed connection: clients and lanes to brokers, broker to broker, any
    node to a controller."""
    brokers, controllers = with_role(roles, "broker"), with_role(roles, "controller")
    lanes = range(spec.consumer_lanes)
    links: list[Link] = []
    for j in brokers:
        links.append(Link("client", f"n{j}", next(ports), real[j].client))
        links += [Link(f"lane{k}", f"n{j}", next(ports), real[j].lanes[k]) for k in lanes]
        links += [Link(f"n{i}", f"n{j}", next(ports), real[j].peers[i]) for i in brokers if i != j]
    for j in controllers:
        links += [Link(f"n{i}", f"c{j}", next(ports), real[j].controller) for i in roles if i != j]
    return links
