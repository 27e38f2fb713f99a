"""The `Cluster` protocol and its optional capabilities.

A fault asks for a capability (`isinstance(cluster, Killable)`) instead of
assuming it: the external backend has none, the local backend has them all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from harness.proxy.links import LinkMap


@runtime_checkable
class Cluster(Protocol):
    """A running Kafka cluster with share groups enabled.

    `start` must return only when every broker is registered and share groups
    can consume; `close` must release every process, port and temp dir the
    backend created and must be safe to call twice.
    """

    version: str

    @property
    def bootstrap_servers(self) -> str: ...

    @property
    def broker_ids(self) -> list[int]: ...

    def start(self) -> None: ...

    def close(self) -> None: ...

    def collect_logs(self, dest: Path) -> list[Path]:
        """Copy every node's log into `dest`; must not fail the run if a log is missing."""
        ...


@runtime_checkable
class Killable(Protocol):
    """Nodes can be stopped (SIGTERM), killed (SIGKILL) and started again."""

    def stop_node(self, node_id: int) -> None: ...

    def kill_node(self, node_id: int) -> None: ...

    def start_node(self, node_id: int) -> None: ...

    def restart_node(self, node_id: int) -> None: ...

    def node_alive(self, node_id: int) -> bool: ...


@runtime_checkable
class Pausable(Protocol):
    """Nodes can be frozen (SIGSTOP) and thawed (SIGCONT)."""

    def pause_node(self, node_id: int) -> None: ...

    def resume_node(self, node_id: int) -> None: ...


@runtime_checkable
class Partitionable(Protocol):
    """Every directed link runs through its own Toxiproxy proxy."""

    @property
    def links(self) -> LinkMap: ...

    def cut(self, link_name: str) -> None: ...

    def heal(self, link_name: str) -> None: ...

    def heal_all(self) -> None: ...
