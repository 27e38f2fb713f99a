"""The run's consumer drivers: started, replaced after a crash, closed once.

Every consumer runs the run's behaviour (a chaos run: `docs/driver.md`'s autonomous behaviours) with
the client the pool was given (`harness.clients.registry`: `confluent`, `java`, `franz`, or a
manifest's path): the confluent driver and a manifest's run it in their process, the Java and franz-go
drivers through the harness (`harness.clients.stepped`); a `DriverInfo` without either is refused when
the pool is made, with what it lacks. Consumer `i` is named `consumer-<i>` and connects through the cluster's
consumer lane `i % lanes` where the backend has lanes (`ConsumerLanes`: so a fault can cut one
consumer from one broker), else through the shared bootstrap servers. A replacement gets the next
free index and name: histories never reuse a process name for a new client.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.clients.driver import ConsumerDriver
from harness.clients.registry import driver_info
from harness.cluster.base import Cluster, ConsumerLanes
from harness.errors import HarnessError
from harness.history.store import HistoryWriter
from harness.sys.wait import wait_until

if TYPE_CHECKING:
    from harness.kafka.jars import KafkaDistribution


class DriverPool:
    """Implements `harness.faults.base.ConsumerPool`. Drivers may be started from any thread (`harness.sys.procs`).

    `client` names the driver (`harness.clients.registry.driver_info`); `dist` is the Kafka release's
    jars, for the drivers that need them (java)."""

    def __init__(self, cluster: Cluster, config: dict[str, Any], history: HistoryWriter, log_dir: Path,
                 start_timeout: float = 60.0, client: str = "confluent",
                 dist: KafkaDistribution | None = None) -> None:
        self.cluster = cluster
        self.config = config  # group, topics, behaviour, seed, hold_ms, client_config
        self.behaviour = config["behaviour"]
        self.history = history
        self.log_dir = log_dir
        self.start_timeout = start_timeout
        self.driver = driver_info(client)
        self.driver.check_autonomous()  # before any process: a step-only driver says what it lacks
        self.dist = dist
        self._drivers: list[ConsumerDriver] = []
        self._lanes: dict[str, int | None] = {}
        self._closed: set[str] = set()

    def _bootstrap(self, index: int) -> tuple[str, int | None]:
        if isinstance(self.cluster, ConsumerLanes):
            return self.cluster.consumer_bootstrap(index), self.cluster.lane_of(index)
        return self.cluster.bootstrap_servers, None

    def _spawn(self) -> ConsumerDriver:
        index = len(self._drivers)
        bootstrap, lane = self._bootstrap(index)
        driver = self.driver.make_autonomous(f"consumer-{index}", {**self.config, "bootstrap": bootstrap},
                                             self.history, self.log_dir, self.dist)
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
        refused = [d for d in drivers if d.contract_error]
        if refused:  # a driver speaking another contract is closed, not trusted (docs/driver.md)
            for d in refused:
                self._closed.add(d.name)
                d.close(10)
            raise HarnessError(refused[0].contract_error)

    def live(self) -> list[ConsumerDriver]:
        return [d for d in self._drivers if d.alive() and d.name not in self._closed]

    def all(self) -> list[ConsumerDriver]:
        return list(self._drivers)

    def join(self) -> ConsumerDriver:
        """Start one more driver (it joins the group); return it once it reports `start ok`."""
        new = self._spawn()
        self._wait_started([new])
        return new

    def replace(self, driver: ConsumerDriver | None) -> ConsumerDriver:
        """Start a new driver in the place of `driver`, one of this pool's, SIGKILLed first (the crash
        recorded) if it still runs; return the new one once started. None: a new driver for a slot no
        process holds (as `join`)."""
        if driver is not None:
            if not any(d is driver for d in self._drivers):
                raise ValueError(f"{driver.name} is not a driver of this pool")
            if driver.alive():
                driver.crash()
        return self.join()

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
