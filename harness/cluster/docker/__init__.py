"""The docker backend: the local backend's cluster with every Kafka node a container of an image.

`DockerCluster` is a `LocalCluster` (same spec, ports, rendered configs, Toxiproxy on every directed
link, readiness and capabilities) whose nodes are `ContainerNode`s: containers on the host network,
every listener on 127.0.0.1, started with the uniform command `java ... -cp <image classpath>
kafka.Kafka <server.properties>`. The storage is formatted by the image's own StorageTool, in a
container. So the conformance suite, the chaos matrix and certification run on it unchanged, and any
image that has `java` on its PATH and Kafka's jars at one folder is an implementation under test
(`--kafka-image`, `--kafka-image-classpath`; the default image is `apache/kafka:<version>`).

Toxiproxy is the binary the harness builds (as on the local backend). The harness's Java tools
(the active controller, durable share-state reads, the Java driver) run from the jars of
`--kafka-version` on the host. Containers are labelled (`engine.LABEL`), registered with the
harness's reaper (removed when the harness dies), and removed by `close`.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

from harness.cluster.docker.engine import LABEL, check_layout, engine, owner, require_image, sweep
from harness.cluster.docker.node import ContainerNode, host_network_container
from harness.cluster.local import LocalCluster, LocalClusterSpec
from harness.cluster.local.files import format_storage
from harness.cluster.local.node import LocalNode
from harness.errors import HarnessError
from harness.kafka import cds
from harness.kafka.jars import KafkaDistribution
from harness.cluster.plan import IMAGE_CLASSPATH as DEFAULT_CLASSPATH
from harness.sys.procs import REAPER
from harness.timing import timed


def default_image(version: str) -> str:
    """The image a version runs by default: the Apache Kafka project's own."""
    return f"apache/kafka:{version}"


class DockerCluster(LocalCluster):
    """A real KRaft cluster of Kafka containers on the host network, every link behind Toxiproxy.

    Every capability of `LocalCluster`; fails at construction, one line each, when no engine answers,
    the image is missing or its layout does not fit.
    """

    def __init__(self, spec: LocalClusterSpec, run_dir: Path, image: str | None = None,
                 classpath: str = DEFAULT_CLASSPATH) -> None:
        super().__init__(spec, run_dir)
        self.image = image or default_image(spec.version)
        self.classpath = classpath
        self._client = engine()
        require_image(self._client, self.image)
        check_layout(self._client, self.image, classpath)
        self._cds: Path | bool | None = None  # the image's class-data archives: not looked for yet

    def _prepare_nodes(self) -> None:
        super()._prepare_nodes()
        prefix = f"ksh-{os.getpid()}-{self.run_dir.name[-24:]}".replace(":", "-").lower()
        self._nodes = {i: self._container_node(node, prefix) for i, node in self._nodes.items()}

    def _container_node(self, node: LocalNode, prefix: str) -> ContainerNode:
        return ContainerNode(node.node_id, node.roles, node.home, node.config, node.ports, image=self.image,
                             image_classpath=self.classpath, name_prefix=_docker_name(prefix),
                             extra_mounts=self._archive_mounts())

    def _archives(self) -> Path | None:
        """The class-data archives of this image's JVM (`harness.kafka.cds`), built the first time the
        harness starts the image; None where they cannot be (e.g. a JVM older than 13): nodes then
        start without, only slower."""
        if self._cds is None:
            import docker
            target = cds.image_dir(self._client.images.get(self.image).id)
            try:
                cds.ensure_in(target, lambda work: cds.build(
                    work, self.distribution.release_line, self.classpath, f"image {self.image}",
                    _ContainerLauncher(self._client, self.image, [str(work)])))
                self._cds = target
            except (HarnessError, docker.errors.DockerException) as exc:  # only slower without them
                print(f"kafka-share-harness: {self.image} starts without class-data archives: {exc}", file=sys.stderr)
                self._cds = False
        return self._cds or None

    def _archive_mounts(self) -> list[str]:
        found = self._archives()
        return [str(found)] if found else []

    def upgrade_unsupported(self) -> str:
        return (f"the docker backend runs the release inside its image ({self.image}): a rolling upgrade "
                "would need an image per release, swapped per container; use the local backend")

    def upgrade_node(self, node_id: int, version: str, on_stopped=None) -> str:
        raise HarnessError(self.upgrade_unsupported())

    def _jvm_flags(self, program: str, dist: KafkaDistribution | None = None) -> list[str]:
        found = self._archives()  # of the image's JVM (the host's archives are not for it)
        return [f"-XX:SharedArchiveFile={found / f'{program}.jsa'}"] if found else []

    def _format_storage(self, nodes: list[LocalNode] | None = None, cluster_id: str | None = None) -> None:
        format_storage(nodes or list(self._nodes.values()), self.distribution, tag=f"storage-format {id(self):x}",
                       runner=self._run_in_container, classpath=self.classpath, jvm_flags=self._jvm_flags("storage"),
                       cluster_id=cluster_id)

    def _run_in_container(self, node: LocalNode, cmd: list[str], name: str) -> tuple[int, str]:
        return _run_container(self._client, self.image, cmd, [str(node.home), *self._archive_mounts()],
                              f"formatting storage of node {node.node_id} in {self.image}")

    @timed("cluster")
    def close(self) -> None:
        try:
            super().close()
        finally:
            try:
                sweep(self._client)  # containers of harness processes that are gone
            except Exception:  # the engine went away: the reaper has them registered
                pass


def _run_container(client, image: str, cmd: list[str], mounts: list[str], what: str) -> tuple[int, str]:
    """`cmd` in a container of `image` to its end (host network, the harness's user, `mounts` at the
    same paths): (exit code, its output)."""
    import docker
    try:
        output = client.containers.run(
            image, cmd, remove=True, network_mode="host", user=f"{os.getuid()}:{os.getgid()}", entrypoint=[],
            volumes={m: {"bind": m, "mode": "rw"} for m in mounts}, labels={LABEL: owner()},
            environment={"KAFKA_LOG4J_OPTS": ""}, stderr=True)
    except docker.errors.ContainerError as exc:
        return exc.exit_status, (exc.stderr or b"").decode(errors="replace")
    except docker.errors.APIError as exc:
        raise HarnessError(f"{what}: {exc.explanation}") from None
    return 0, output.decode(errors="replace")


class _ContainerLauncher:
    """`cds.Launcher` for an image: the archive's JVMs run in containers of it, `mounts` bound."""

    def __init__(self, client, image: str, mounts: list[str]) -> None:
        self.client, self.image, self.mounts = client, image, mounts

    def run(self, name: str, cmd: list[str], what: str) -> None:
        code, output = _run_container(self.client, self.image, cmd, self.mounts, what)
        if code != 0:
            raise HarnessError(f"{what} failed (exit {code}): {(output.strip().splitlines() or ['no output'])[-1]}")

    def start(self, name: str, cmd: list[str], home: Path) -> "_Started":
        unique = f"ksh-cds-{os.getpid()}-{name}-{uuid.uuid4().hex[:6]}"
        container = host_network_container(self.image, cmd, unique, self.mounts).start()
        return _Started(container.get_wrapped_container())


class _Started:
    """A started container as `cds.Running`: registered with the reaper until removed."""

    def __init__(self, container) -> None:
        self.container = container
        REAPER.register_container(container.id)

    def alive(self) -> bool:
        try:
            self.container.reload()
        except Exception:  # removed
            return False
        return self.container.status == "running"

    def stop(self, timeout: float) -> int | None:
        self.container.stop(timeout=int(timeout))  # SIGTERM, then SIGKILL after `timeout`
        return self.container.wait(timeout=timeout).get("StatusCode")

    def kill(self) -> None:
        try:
            self.container.remove(force=True)
        except Exception:  # already gone
            pass
        REAPER.forget_container(self.container.id)


def _docker_name(text: str) -> str:
    """`text` in the alphabet of container names ([a-zA-Z0-9][a-zA-Z0-9_.-]*)."""
    clean = "".join(c if c.isalnum() or c in "_.-" else "-" for c in text)
    return clean.strip("-.") or "ksh"
