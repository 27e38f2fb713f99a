"""The external backend: an existing cluster reached by its bootstrap servers.

The harness neither starts nor stops it, and it offers no capability beyond
`Cluster`: faults that need process or link control are skipped with a reason.
"""

from __future__ import annotations

from pathlib import Path

from harness.cluster.inspect import ClusterInspector
from harness.cluster.readiness import wait_share_consumable
from harness.sys.wait import wait_until


class ExternalCluster:
    """A cluster someone else runs; `close` leaves it running. A `harness.cluster.base.Cluster` with no
    capability; a context manager (`__enter__` waits until it serves, `__exit__` lets it be)."""

    def __init__(self, bootstrap_servers: str, version: str = "external", timeout: float = 60.0) -> None:
        self._bootstrap = bootstrap_servers
        self.version = version
        self.timeout = timeout
        self.inspector = ClusterInspector(bootstrap_servers)
        self._brokers: list[int] = []

    @property
    def bootstrap_servers(self) -> str:
        return self._bootstrap

    @property
    def broker_ids(self) -> list[int]:
        return list(self._brokers)

    def __enter__(self) -> ExternalCluster:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(self) -> None:
        """Wait until the cluster answers and a share group consumes a record."""
        self._brokers = wait_until(self.inspector.broker_ids, timeout=self.timeout,
                                   what=f"the cluster at {self._bootstrap} to answer")
        wait_share_consumable(self._bootstrap, self.inspector, timeout=self.timeout,
                              replication_factor=min(3, len(self._brokers)))

    def close(self) -> None:
        """Nothing to release: the harness did not start this cluster."""

    def collect_logs(self, dest: Path) -> list[Path]:
        return []
