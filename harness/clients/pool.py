"""The run's consumer drivers: started, replaced after a crash, closed once.

Consumer `i` is named `consumer-<i>` and connects through the cluster's
consumer lane `i % lanes` where the backend has lanes (so a fault can cut one
consumer from one broker), else through the shared bootstrap servers. A
replacement gets the next free index and name: histories never reuse a
process name for a new client.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.clients.driver import ConsumerDriver
from harness.history.store import HistoryWriter
from harness.wait import wait_until


class DriverPool:
    """Implements `harness.faults.base.ConsumerPool`. Drivers may be started from any thread (`harness.procs`)."""

    def __init__(self, cluster: Any, config: dict[str, Any], history: HistoryWriter, log_dir: Path,
                 start_timeout: float = 60.0) -> None:
        self.cluster = cluster
        self.config = config  # group, topics, behaviour, client_config
        self.behaviour = config["behaviour"]
        self.history = history
        self.log_dir = log_dir
        self.start_timeout = start_timeout
        self._drivers: list[ConsumerDriver] = []
        self._lanes: dict[str, int | None] = {}
        self._closed: set[str] = set()

    def _bootstrap(self, index: int) -> tuple[str, int | None]:
        if hasattr(self.cluster, "consumer_bootstrap"):
            return self.cluster.consumer_bootstrap(index), self.cluster.lane_of(index)
        return self.cluster.bootstrap_servers, None

    def _spawn(self) -> ConsumerDriver:
        index = len(self._drivers)
        bootstrap, lane = self._bootstrap(index)
        driver = ConsumerDriver(f"consumer-{index}", {**self.config, "bootstrap": bootstrap}, self.history,
                                self.log_dir)
        driver.start()
        self._drivers.append(driver)
        self._lanes[driver.name] = lane
        return driver

    def start(self, count: int) -> list[ConsumerDriver]:
        """Start `count` drivers and wait until each reports `start ok`."""
        new = [self._spawn() for _ in range(count)]
        self._wait_started(new)
        return new

    def _wait_started(self, drivers: list[ConsumerDriver]) -> None:
        names = {d.name for d in drivers}
        wait_until(lambda: names <= {op.process for op in self.history.ops() if op.f == "start" and op.type == "ok"},
                   timeout=self.start_timeout, what=f"consumer drivers {', '.join(sorted(names))} to start",
                   fatal=lambda: next((f"{d.name} exited early (see {d.log_path})" for d in drivers
                                       if not d.alive()), None))

    def live(self) -> list[ConsumerDriver]:
        return [d for d in self._drivers if d.alive() and d.name not in self._closed]

    def all(self) -> list[ConsumerDriver]:
        return list(self._drivers)

    def replace(self, driver: ConsumerDriver | None) -> ConsumerDriver:
        new = self._spawn()
        self._wait_started([new])
        return new

    def lane_processes(self, lane: int) -> list[str]:
        return [d.name for d in self.live() if self._lanes.get(d.name) == lane]

    def close_one(self, name: str, timeout: float = 60.0) -> str:
        """Close one driver cleanly (it leaves the group); returns how its close ended."""
        driver = next(d for d in self._drivers if d.name == name)
        if name not in self._closed:
            self._closed.add(name)
            driver.close(timeout)
        closes = [op.type for op in self.history.ops() if op.process == name and op.f == "close" and op.type != "invoke"]
        return closes[-1] if closes else "without a result"

    def close_all(self) -> None:
        """Close every driver once (closing is what ends its share session cleanly)."""
        for driver in self._drivers:
            if driver.name not in self._closed:
                self._closed.add(driver.name)
                driver.close()
