"""A conformance session: one share group on a real cluster, driven step by step by a test.

A test opens a `ShareSession` (through the conformance suite's `share_session` fixture): a
`RunContext` (harness.run.context) gives it a fresh topic and share group with the configs its spec
asks for, and its history. The test produces records (`LogOperations`), administers the group
(`AdminOperations`), starts consumers of the spec's client in step mode (`consumer`), and asserts a
KIP-932 behaviour on what they were given. `finish()` runs the same tail as every run: consumers
closed, durable read, close, every checker, verdict.json; `assert_conforms()` asserts the verdict,
so a test passes only if its own assertion holds and the history conforms record by record.
"""

from __future__ import annotations

from pathlib import Path

from harness.checkers import compose, verdict_word
from harness.clients.options import refusal, refused
from harness.clients.registry import driver_info, effective_options
from harness.conformance.admin_ops import AdminOperations
from harness.conformance.consumer import ConstructionRefused, StepConsumer
from harness.conformance.log_ops import LogOperations
from harness.conformance.outcomes import precondition
from harness.conformance.sasl import sasl_client_config
from harness.errors import HarnessError
from harness.history.store import HistoryWriter
from harness.run.context import RunContext
from harness.sys.wait import wait_until


class ShareSession(LogOperations, AdminOperations):
    """A fresh topic and share group on `cluster`, its history, producer and step consumers."""

    def __init__(self, cluster, spec, run_dir: Path, names: tuple[str, str] | None = None) -> None:
        self.ctx = RunContext.open(spec, cluster, run_dir, names)
        self.cluster, self.spec, self.run_dir, self.client = cluster, spec, run_dir, spec.client
        self.history, self.topic, self.group, self.limits = (self.ctx.history, self.ctx.topic, self.ctx.group,
                                                             self.ctx.limits)
        self.consumers: list[StepConsumer] = []
        self._made = 0  # consumers asked for, refused ones too (each driver's process name is its own)
        self._other_histories: list = []  # of consumers of other groups (`consumer(own_history=True)`)
        self._producer = None
        self._producers = 0
        self.producer_config: dict[str, str] = {}  # more librdkafka settings of the session's producer
        self._produced = 0
        self.results: tuple = ()
        self.valid: bool | None = None

    def dist(self):
        """The Kafka distribution of the version under test (the Java driver and tools run its jars)."""
        return self.ctx.dist()

    # -- consumers ------------------------------------------------------------
    def consumer(self, mode: str = "explicit", user: tuple[str, str] | None = None, group: str | None = None,
                 topics: list[str] | None = None, own_history: bool = False, lane: int | None = None,
                 **client_config: str) -> StepConsumer:
        """A new share consumer of the group in step mode (`explicit` or `implicit` acknowledgement; `default`:
        the driver sets no acknowledgement mode, driver contract 3).
        `user`: (name, password) to connect as on the cluster's SASL/PLAIN listener; `group`: another
        group id to join instead of the session's (a test of the group namespace); `topics`: the topics it
        subscribes to instead of the session's (a test of the subscription; none: it subscribes to none).
        `own_history`: with `group`, its operations go to a history of their own (`history-<group>.jsonl` in the
        run's directory), which the session's checkers, judging one group, do not read: the test asserts on what
        it was given (`records_given`). `lane`: it connects through that consumer lane's proxies (a cluster the
        harness started with lanes), so a `consumer-cut` fault cuts it off a broker alone."""
        info = self.driver
        history = self.history
        if own_history:
            if group is None or group == self.group:
                raise HarnessError("own_history is for a consumer of another group: pass group=")
            history = HistoryWriter(self.run_dir / f"history-{group}.jsonl")
            self._other_histories.append(history)
        self.require("mode_default" if mode == "default" else mode)
        name = f"consumer-{self._made}"
        self._made += 1
        bootstrap = self.cluster.bootstrap_servers
        if lane is not None:
            bootstrap = self.cluster.consumer_bootstrap(lane)
        if user is not None:
            bootstrap = self.sasl_bootstrap()
            client_config = {**sasl_client_config(self.client, *user), **client_config}
        config = {"group": group or self.group, "topics": [self.topic] if topics is None else list(topics),
                  "mode": mode, "seed": self.spec.seed,
                  "bootstrap": bootstrap,
                  "client_config": {"max.poll.records": str(self.spec.max_poll_records), **effective_options(self.spec),
                                    **{k.replace("_", "."): v for k, v in client_config.items()}}}
        driver = info.make(name, config, history, self.run_dir / "logs",
                           self.dist() if info.jvm else None)
        driver.start()
        try:
            wait_until(lambda: any(op.process == name and op.f == "start" for op in history.ops()) or
                       driver.closed.is_set(), timeout=60, what=f"{name} to start")  # closed: its output all read
        except BaseException:  # not started in time (or interrupted): not left running
            driver.close(10)
            raise
        if driver.contract_error:
            driver.close(10)
            raise HarnessError(driver.contract_error)
        refused_start = next((op.value for op in history.ops()
                              if op.process == name and op.f == "start" and op.type == "fail"), None)
        if refused_start is not None:  # driver contract 4: the library refused the configuration (the driver exits)
            driver.close(10)
            raise ConstructionRefused(name, str(refused_start.get("error") if isinstance(refused_start, dict)
                                                else refused_start))
        if not driver.alive() or not any(op.process == name and op.f == "start" for op in history.ops()):
            driver.close(10)
            raise HarnessError(f"{name} exited at start (see {driver.log_path})")
        start = next((op.value for op in history.ops() if op.process == name and op.f == "start"), None)
        start = start if isinstance(start, dict) else {}
        ignored = refused(effective_options(self.spec), start)
        if ignored:  # the configuration asked for would not be the one that ran (the session's probe says it first)
            driver.close(10)
            raise HarnessError(refusal(info.name, ignored, start))
        consumer = StepConsumer(driver, mode, info.features)
        self.consumers.append(consumer)
        return consumer

    # -- the verdict ----------------------------------------------------------
    def finish(self, ended_early: bool = False) -> "ShareSession":
        """Close what is open, read the durable state, check the history with every checker.
        `ended_early`: the test stopped before settling its records (verdict.json says so)."""
        try:
            for c in self.consumers:
                c.close()
            if self._producer is not None:
                self._producer.flush(30)
            self.ctx.read_durable_state()
        finally:
            for c in self.consumers:
                c.driver.close(10)
            for history in self._other_histories:
                history.close()
            self.ctx.close()
        self.results, engine = self.ctx.check()
        self.valid = self.ctx.write_verdict(self.results, engine, ended_early=ended_early)
        return self

    @property
    def after_close_s(self) -> float:
        """How soon after a consumer's close() returned its effects must show (its records released, its
        member gone): 10 s, or half the group's session timeout if less. After the whole timeout the
        coordinator removes a member that merely went quiet, and what it held is released, which would pass
        a close() that did nothing."""
        return min(10.0, self.limits.get("session_timeout_ms", 45000) / 2000)

    @property
    def driver(self):
        """The driver this session's consumers run (`harness.clients.registry.DriverInfo`)."""
        return driver_info(self.client)

    def require(self, *features: str) -> None:
        """Skip the test as "not supported by <client>" unless the driver declares every one of `features`
        ("older contract: ..." if the driver's contract predates one of them: not run)."""
        import pytest
        older = [why for f in features if (why := self.driver.older_contract(f))]
        if older:
            pytest.skip(older[0])
        missing = [f for f in features if not self.driver.supports(f)]
        if missing:
            pytest.skip(f"not supported by the {self.driver.name} driver: {', '.join(missing)}")

    def assert_conforms(self, without: tuple[str, ...] = ()) -> None:
        """Close the session, check its history against the reference model, assert the verdict.
        `without`: properties the test makes impossible to judge (e.g. durable-state once the group
        is deleted); each must still not fail, and every other one must pass. A property the model could
        not decide (unknown) makes the test inconclusive (`Inconclusive`), never the system's FAIL (issue 46
        item 7): the history did not show what the test was to judge."""
        self.finish()
        judged = [r for r in self.results if r.checker not in without]
        assert all(r.valid is not False for r in self.results), self.summary()
        precondition(compose(judged) is True, "the model could not decide every property of the history: "
                     + self.summary())

    def ops(self, process: str | None = None, f: str | None = None) -> list:
        return [op for op in self.history.ops() if (process is None or op.process == process)
                and (f is None or op.f == f)]

    def summary(self) -> str:
        lines = [f"{verdict_word(self.valid)} {self.run_dir}"]
        for r in self.results:
            if r.valid is not True:
                lines.append(f"  {r.checker}: {verdict_word(r.valid)} {r.reason} "
                             + "; ".join(a.message for a in r.anomalies[:5]))
        return "\n".join(lines)
