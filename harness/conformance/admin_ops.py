"""A conformance session's administration: the Admin API through harness/java/ShareAdmin.java
(describe, alter and delete offsets, start-offset reads), group and broker configs, and the SASL/PLAIN
listener of a cluster that has one. Offset changes are recorded in the session's history
(`reset-offsets`, `share-offsets`) so the checkers expect what the group must deliver again. Mixed
into `harness.conformance.session.ShareSession`, whose fields it uses (cluster, spec, history,
topic, group, run_dir)."""

from __future__ import annotations

from typing import Any

from harness.cluster.base import SaslListeners, unchecked_of
from harness.cluster import java_admin
from harness.cluster.java_admin import read_share_offsets
from harness.cluster.local.files import write_private
from harness.conformance.outcomes import needs_admin_api, precondition
from harness.conformance.sasl import sasl_client_config
from harness.errors import HarnessError
from harness.sys.paths import cache_dir

#: how long after a client reported a commit the broker's state may take to show it settled
SETTLE_S = 3.0


class AdminOperations:
    """Administration (see the module docstring); needs the session's fields."""

    def read_share_offsets(self) -> dict[int, dict[str, Any]]:
        """The group's offsets per partition of the topic (Admin listShareGroupOffsets: start_offset, and
        lag where the release reports it, else None), recorded in the history as a `share-offsets`
        read; partitions not initialized yet are absent."""
        return self.read_share_offsets_or_none() or {}

    def read_share_offsets_or_none(self) -> dict[int, dict[str, Any]] | None:
        """`read_share_offsets`, None when the read failed (the history's `share-offsets` op says why)."""
        needs_admin_api(self.cluster, "DescribeShareGroupOffsets")
        found = read_share_offsets(self.dist(), cache_dir(), self.cluster.bootstrap_servers, self.group,
                                   self.history)
        return None if found is None else {p["partition"]: p for p in found if p["topic"] == self.topic}

    def read_start_offsets(self) -> dict[int, int]:
        """The group's start offset per partition of the topic (see `read_share_offsets`)."""
        return {p: found["start_offset"] for p, found in self.read_share_offsets().items()}

    @property
    def dead_letter_topic(self) -> str | None:
        """The group's dead-letter queue topic (KIP-1191), when the session's spec turned it on."""
        return self.ctx.dead_letter_topic

    def read_dead_letters(self) -> list[dict]:
        """The group's DLQ records (`harness.kafka.dead_letter.parse_dead_letter`: the source record each
        names, its delivery count and message, key and value), read to the topic's end once no record
        is ARCHIVING, and recorded in the history (`dead-letters`: the checker accounts for them)."""
        if self.ctx.dead_letter_topic is None:
            raise HarnessError("this session's group has no dead-letter queue: open it with dead_letter='headers'")
        found = self.ctx.read_dead_letters()
        if found is None:
            raise HarnessError(f"reading {self.ctx.dead_letter_topic} failed (see the history's dead-letters op)")
        return found

    def all_settled(self) -> bool:
        """Whether every record written to the topic is settled for the group: for each partition a
        produce wrote to, the group's lag (`read_share_offsets`, where the release reports it) is 0,
        or its start offset has passed the last offset written there. Once it holds, the group has
        nothing left to deliver: a poll loop waiting for more stops (`poll_until`'s `settled`), e.g.
        when the client acknowledged records it never handed to the application. (4.4.0 reports lag 0
        with the start offset still at 0 once every record is acknowledged: the lag is read first.) On an
        implementation that serves no read of the group's offsets (`unchecked_of`: durable-state), the history's
        own settlement (`harness.run.drain.all_settled`) says it instead."""
        if self.broker_side_unreadable():
            from harness.run.drain import all_settled  # (deferred: light, but only this path needs it)
            return all_settled(self.history.ops())
        try:
            unsettled = self.unsettled()
        except HarnessError:  # a read that failed: not known to be settled (a poll loop goes on)
            return False
        return unsettled is not None and not unsettled

    def unsettled(self) -> dict[int, dict[str, Any] | None] | None:
        """The partitions a produce wrote to whose records the group has not all settled (see
        `all_settled`): partition -> the group's read of it (None: not initialized); None when nothing
        was written yet."""
        ends = {partition: end for partition, (_, end) in self.log_ends().items() if end > 0}
        if not ends:
            return None
        found = self.read_share_offsets_or_none()
        if found is None:
            raise HarnessError(f"reading the share group {self.group}'s offsets failed (the history's share-offsets "
                               f"op says why): whether its records are settled is unknown")

        def settled(partition: int, end: int) -> bool:
            read = found.get(partition)
            if read is None:  # not initialized yet: nothing was delivered from it
                return False
            return read["lag"] == 0 if read.get("lag") is not None else read["start_offset"] >= end
        return {partition: found.get(partition) for partition, end in ends.items() if not settled(partition, end)}

    def assert_settled_by_the_broker(self, reported: str, within_s: float = SETTLE_S) -> None:
        """Cross-check what a client reported (`reported`: e.g. "commitSync returned success for every
        ACCEPT") against the broker: every record written to the topic is settled in the group's state
        (`unsettled`) within `within_s` seconds of the report (reads of the state a share coordinator
        persisted may trail the acknowledgements by a write; a client that defers what it reported
        committed to its next poll leaves them unsettled for good). KIP-932's commitSync "commits the
        acknowledgements" and its callback reports a completed commit: a client that reports a commit it
        did not make fails here, whatever it printed. A read that fails decides nothing: the test is
        inconclusive, not the client's FAIL."""
        import time

        why = self.broker_side_unreadable()
        if why:  # nothing to cross-check against: the test cannot show what it is for (NOT SUPPORTED there)
            self.history.append("harness", "info", "cross-check", {"reported": reported, "not_made": why})
            needs_admin_api(self.cluster, f"DescribeShareGroupOffsets, to cross-check that {reported}")
            precondition(False, f"the broker's side cannot be read for the cross-check: {why}")
        deadline = time.monotonic() + within_s
        while True:
            try:
                unsettled = self.unsettled()
            except HarnessError as exc:
                precondition(False, f"the broker's side could not be read for the cross-check: {exc}")
            precondition(unsettled is not None, "nothing was written to the topic: no acknowledgement to cross-check")
            if not unsettled or time.monotonic() >= deadline:
                break
        assert not unsettled, (
            f"{reported}, but the broker had not settled every record {within_s:.0f} s later: the group's reads "
            f"of the partitions still holding records {unsettled} (KIP-932: a commit of acknowledgements makes "
            f"them final; the client's report and the broker disagree)")

    def broker_side_unreadable(self) -> str:
        """Why the group's state cannot be read from the implementation ("" where it can: Apache Kafka, kfake)."""
        return unchecked_of(self.cluster).get("durable-state", "")

    def admin(self, command: str, *args: str, user: tuple[str, str] | None = None) -> dict[str, Any]:
        """Run a ShareAdmin command (describe, list, delete, alter-offsets, delete-offsets): its JSON
        result, or {"error": ExceptionName, "message"} when the broker refused it. `user`: (name,
        password) to run it as on the SASL/PLAIN listener."""
        needs_admin_api(self.cluster, f"the share-group admin request behind ShareAdmin {command}")
        bootstrap, env = self.cluster.bootstrap_servers, None
        if user is not None:
            bootstrap = self.sasl_bootstrap()
            props = self.run_dir / f"admin-{user[0]}.properties"
            write_private(props, "".join(f"{k}={v}\n" for k, v in sasl_client_config("java", *user).items()))
            env = {"KSH_CLIENT_PROPERTIES": str(props)}
        try:
            return java_admin.run_java(self.dist(), cache_dir(), "ShareAdmin", bootstrap, command, *args, env=env)
        except RuntimeError as exc:
            raise HarnessError(f"ShareAdmin {command} failed: {exc}") from None

    def consumer_group_member(self, group: str):
        """A consumer-group member (KIP-848 protocol, confluent-kafka's Consumer in this process, not the client
        under test) of `group` on the session's topic, from the earliest offset, committing nothing."""
        from confluent_kafka import Consumer
        member = Consumer({"bootstrap.servers": self.cluster.bootstrap_servers, "group.id": group,
                           "group.protocol": "consumer", "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        member.subscribe([self.topic])
        return member

    def try_group_configs(self, group: str, **configs: str) -> str | None:
        """Set configs of `group` (underscores for dots, e.g. share_record_lock_duration_ms="2000"): None
        if the cluster accepted them, else the Kafka error it refused them with (e.g. INVALID_CONFIG)."""
        needs_admin_api(self.cluster, "IncrementalAlterConfigs of a group")
        from harness.cluster.admin import group_config_refusal  # (deferred: loads confluent_kafka)
        from harness.cluster.inspect import ClusterInspector  # (deferred: loads confluent_kafka)
        return group_config_refusal(ClusterInspector(self.cluster.bootstrap_servers).admin, group,
                                    {k.replace("_", "."): v for k, v in configs.items()})

    def group_config_bounds_refusals(self, config: str, bound: str) -> tuple[int, int, dict[int, str | None]]:
        """Group config `config` (dotted) tried on a probe group at the brokers' bounds and one past each
        (`bound` names them with `{}` for min/max, e.g. "group.share.{}.delivery.count.limit"): (min,
        max, value -> the refusal, None where accepted)."""
        low, high = self.config_bounds(bound)
        probe = f"{self.group}-bounds"
        tried = {value: self.try_group_configs(probe, **{config.replace(".", "_"): str(value)})
                 for value in (low - 1, high + 1, low, high)}
        return low, high, tried

    def config_bounds(self, bound: str) -> tuple[int, int]:
        """The brokers' (min, max) of a group config, `bound` naming them with `{}` for min/max (KIP-932's
        broker configs, e.g. "group.share.{}.record.lock.duration.ms"). A cluster that shows neither fails
        the check that needs them (an assertion naming them: the brokers do not have the configs the KIP
        gives them), never a crash."""
        low, high = (self.broker_config(bound.format(edge)) for edge in ("min", "max"))
        assert low is not None and high is not None, (
            f"the brokers show no bounds {bound.format('min')} and {bound.format('max')} (DescribeConfigs)")
        return int(low), int(high)

    def broker_config(self, name: str) -> str | None:
        """The value of broker config `name` on the first broker (a bound the cluster enforces)."""
        needs_admin_api(self.cluster, f"DescribeConfigs of a broker ({name})")
        from harness.cluster.admin import broker_configs  # (deferred: loads confluent_kafka)
        from harness.cluster.inspect import ClusterInspector  # (deferred: loads confluent_kafka)
        admin = ClusterInspector(self.cluster.bootstrap_servers).admin
        return broker_configs(admin, self.cluster.broker_ids[0]).get(name)

    def sasl_bootstrap(self) -> str:
        servers = self.cluster.sasl_bootstrap_servers if isinstance(self.cluster, SaslListeners) else None
        if not servers:
            raise HarnessError("this cluster has no SASL/PLAIN listener: start a local one with sasl_users")
        return servers

    def describe(self) -> dict[str, Any]:
        return self.admin("describe", self.group)

    def alter_offset(self, partition: int, offset: int) -> dict[str, Any]:
        """Alter the group's start offset of `partition` (recorded in the history as `reset-offsets`)."""
        records = sorted({(op.value["offset"], op.value["id"]) for op in self.history.ops()
                          if op.f == "produce" and op.type == "ok" and op.value.get("topic") == self.topic
                          and op.value.get("partition") == partition and op.value.get("offset", -1) >= offset})
        value = {"group": self.group, "topic": self.topic, "partitions": [
            {"partition": partition, "offset": offset, "records": [{"offset": o, "id": i} for o, i in records]}]}
        self.history.append("admin", "invoke", "reset-offsets", value)
        result = self.admin("alter-offsets", self.group, self.topic, str(partition), str(offset))
        if "error" in result:
            self.history.append("admin", "fail", "reset-offsets", {**value, "error": result["error"]})
        else:
            self.history.append("admin", "ok", "reset-offsets", value)
        return result

    def log_ends(self) -> dict[int, tuple[int, int]]:
        """partition -> (log start, log end) of the topic as the history shows them: the end past the last
        offset a produce was acknowledged at, the start at the highest `records-deleted`; partitions the
        history names neither way are absent."""
        ends: dict[int, tuple[int, int]] = {}
        for op in self.history.ops():
            v = op.value if isinstance(op.value, dict) else {}
            if v.get("topic") != self.topic or op.type != "ok":
                continue
            low, end = ends.get(v.get("partition"), (0, 0))
            if op.f == "produce" and isinstance(v.get("offset"), int) and v["offset"] >= 0:
                ends[v["partition"]] = (low, max(end, v["offset"] + 1))
            elif op.f == "records-deleted":
                ends[v["partition"]] = (max(low, int(v.get("offset", 0))), end)
        return ends

    def delete_offsets(self, reset: str = "earliest", partitions: int | None = None) -> dict[str, Any]:
        """Delete the group's offsets of the topic (Admin deleteShareGroupOffsets): each share-partition
        starts again where share.auto.offset.reset (`reset`, the group's) says, at its next fetch. Recorded
        as a `reset-offsets` per partition (`partitions`: the topic's count, default the spec's): earliest
        (and by_duration, whose window holds every record of a test) at the log start, naming every record
        from there (which the group must deliver again); latest at the log end as the history knows it,
        naming none. A record written after the deletion but before the next fetch may fall either side
        of a latest start: the caller lets a fetch happen first (the explorer warms the group up again)."""
        result = self.admin("delete-offsets", self.group, self.topic)
        if "error" in result:
            return result
        ends = self.log_ends()
        for p in range(partitions or self.spec.topic_partitions):
            low, end = ends.get(p, (0, 0))
            start = end if reset == "latest" else low
            records = sorted({(op.value["offset"], op.value["id"]) for op in self.history.ops()
                              if op.f == "produce" and op.type == "ok" and op.value.get("topic") == self.topic
                              and op.value.get("partition") == p and op.value.get("offset", -1) >= start})
            self.history.append("admin", "ok", "reset-offsets", {"group": self.group, "topic": self.topic,
                                "partitions": [{"partition": p, "offset": start, "records": [
                                    {"offset": o, "id": i} for o, i in records]}]})
        return result
