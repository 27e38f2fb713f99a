"""A rolling upgrade: the cluster moves to newer Kafka releases broker by broker with the workload
running, as operators upgrade (Kafka's upgrade notes: one broker at a time, then finalise the features).

`rolling-upgrade` takes the cluster from the release it runs to the newest the harness supports
(`DEFAULT_VERSION`), through the newest known release of every line in between: 4.2.2 -> 4.3.1 ->
4.4.0. For each release, every node in turn is stopped (SIGTERM, controlled shutdown) and started on
that release's jars with its data kept, and the next waits until every partition is led with a full
ISR; once every node runs it, `FeatureCommand upgrade --release-version <line>` of that release
finalises the features (metadata.version, share.version, ...).

Proof of effect, per node: a new process, and the release its own server log reports at start
("Kafka version: ..."); per release: the finalised feature levels the cluster reports before and after.
The history records which release each node ran when (`release` operations, docs/history.md: one
before the first step, and one the moment each node's old process has exited), so the checkers apply
the model profile of each phase (`harness.model.profiles.PhasedProfile`).

The upgrade cannot be undone (Kafka has no downgrade across these metadata versions), so the heal only
makes sure every node runs, every partition is in sync and the preferred leaders lead. For the same
reason the fault is never drawn by `all` or its group: a run asks for it by name.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from harness.cluster.base import Upgradable, node_ids
from harness.errors import HarnessError
from harness.faults.base import FaultContext, NotApplied, Plan
from harness.faults.bounce import heal_roll
from harness.faults.process import DISRUPTS
from harness.faults.recovery import wait_in_sync
from harness.kafka.versions import DEFAULT_VERSION, SUPPORTED_LINES, newest_known, parse_version
from harness.sys.wait import WaitTimeout


def upgrade_path(current: str, target: str = DEFAULT_VERSION) -> list[str]:
    """The releases a rolling upgrade from `current` goes through to `target`: the newest known release of
    every supported line after `current`'s, up to `target` (which ends it); [] when `current` is not older."""
    now, end = parse_version(current), parse_version(target)
    path = [newest_known(line) for line in SUPPORTED_LINES
            if now[:2] < parse_version(line + ".0")[:2] < end[:2]]
    path = [v for v in path if parse_version(v) > now]
    return path + [target] if end > now else []


def previous_line_release(version: str = DEFAULT_VERSION) -> str:
    """The newest known release of the supported line before `version`'s ("4.4.0" -> "4.3.1"): where a
    rolling upgrade to `version` starts when the release under test is that newest one."""
    at = SUPPORTED_LINES.index(release_of(version))
    if at == 0:
        raise HarnessError(f"{version} is of the oldest supported line: no earlier release to upgrade from")
    return newest_known(SUPPORTED_LINES[at - 1])


def release_of(version: str) -> str:
    """The `--release-version` that finalises `version`'s features: its line ("4.4.0" -> "4.4")."""
    return ".".join(version.split(".")[:2])


def _levels(cluster: Upgradable) -> str:
    wanted = ("metadata.version", "share.version")
    found = cluster.features()
    return ", ".join(f"{name}={found[name].finalized}" if name in found else f"{name} not reported" for name in wanted)


@dataclass(frozen=True)
class RollingUpgrade:
    """Upgrade every node in turn to each newer release, finalising the features after each."""

    group: str = "restart"
    effects: tuple[str, ...] = DISRUPTS + ("session-loss",)
    needs: tuple[type, ...] = (Upgradable,)
    exclusive: bool = True
    takes_node: bool = True
    #: never drawn by `all` or its group (`harness.faults.parse_faults`): the cluster stays upgraded
    by_name_only: bool = True
    name: str = "rolling-upgrade"

    def plan(self, ctx: FaultContext, pick: int) -> Plan:
        cluster = ctx.cluster_as(Upgradable)
        if why := cluster.upgrade_unsupported():
            raise NotApplied(why)
        nodes = node_ids(cluster)
        versions = {n: cluster.node_version(n) for n in nodes}
        path = upgrade_path(min(versions.values(), key=parse_version))
        if not path:
            raise NotApplied(f"every node runs {sorted(set(versions.values()))}: nothing newer to upgrade to "
                             f"(the newest supported is {DEFAULT_VERSION})")
        first = pick % len(nodes)  # the seeded node to start each roll with
        order = nodes[first:] + nodes[:first]
        processes = [d.name for d in ctx.consumers.live()] if ctx.consumers else []
        return Plan([f"n{n}" for n in order], ctx.topic, None, processes=processes,
                    state={"order": order, "path": path, "from": versions})

    def apply(self, ctx: FaultContext, plan: Plan) -> str:
        cluster, order = ctx.cluster_as(Upgradable), plan.state["order"]
        versions = {n: cluster.node_version(n) for n in order}
        self._record(ctx, versions)
        steps = [f"features before: {_levels(cluster)}"]
        for version in plan.state["path"]:
            for node in order:
                if parse_version(versions[node]) >= parse_version(version):
                    continue
                started, old_pid = time.monotonic(), cluster.node_pid(node)

                def stopped(node: int = node, version: str = version) -> None:
                    # the old release runs no more: from now on the history has the node on the new one
                    versions[node] = version
                    self._record(ctx, versions)
                try:
                    cluster.upgrade_node(node, version, on_stopped=stopped)
                    wait_in_sync(ctx)
                except WaitTimeout as exc:
                    raise NotApplied(f"after upgrading n{node} to {version}: {str(exc).splitlines()[0]}") from None
                reported = cluster.reported_version(node)
                if reported != version or cluster.node_pid(node) in (None, old_pid):
                    raise NotApplied(f"n{node} was started on {version}'s jars but its log reports {reported} "
                                     f"(pid {old_pid} -> {cluster.node_pid(node)})")
                steps.append(f"n{node} {version} (pid {old_pid} -> {cluster.node_pid(node)}, its log: "
                             f"\"Kafka version: {reported}\"), in sync after {time.monotonic() - started:.1f} s")
            release = release_of(version)
            cluster.finish_upgrade(release)
            levels = _levels(cluster)
            ctx.history.append("nemesis", "ok", "features", {"release_version": release, "levels": levels})
            steps.append(f"features finalised at --release-version {release}: {levels}")
        return "rolling upgrade, a full ISR between steps: " + "; ".join(steps)

    def heal(self, ctx: FaultContext, plan: Plan) -> str:
        cluster = ctx.cluster_as(Upgradable)
        versions = {n: cluster.node_version(n) for n in plan.state["order"]}
        return heal_roll(ctx, plan.state["order"], f" ({', '.join(f'n{n} {v}' for n, v in sorted(versions.items()))})")

    @staticmethod
    def _record(ctx: FaultContext, versions: dict[int, str]) -> None:
        """The release every node runs from now on: the checkers' phase profile (docs/history.md)."""
        ctx.history.append("nemesis", "ok", "release", {"nodes": {str(n): v for n, v in sorted(versions.items())}})
