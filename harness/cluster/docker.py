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
`--kafka-version` on the host. Containers are labelled (`docker_engine.LABEL`), registered with the
harness's reaper (removed when the harness dies), and removed by `close`.
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.cluster.docker_engine import LABEL, check_layout, engine, owner, require_image, sweep
from harness.cluster.docker_node import ContainerNode
from harness.cluster.local import LocalCluster, LocalClusterSpec
from harness.cluster.local_files import format_storage
from harness.cluster.local_node import LocalNode
from harness.errors import HarnessError
from harness.spec import IMAGE_CLASSPATH as DEFAULT_CLASSPATH


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

    def _prepare_nodes(self) -> None:
        super()._prepare_nodes()
        prefix = f"ksh-{os.getpid()}-{self.run_dir.name[-24:]}".replace(":", "-").lower()
        self._nodes = {i: self._container_node(node, prefix) for i, node in self._nodes.items()}

    def _container_node(self, node: LocalNode, prefix: str) -> ContainerNode:
        return ContainerNode(node.node_id, node.roles, node.home, node.config, node.ports, image=self.image,
                             image_classpath=self.classpath, name_prefix=_docker_name(prefix))

    def _jvm_flags(self, program: str) -> list[str]:
        return []  # the image's JVM: the host's class-data archives are not for it

    def _format_storage(self) -> None:
        format_storage(list(self._nodes.values()), self.distribution, tag=f"storage-format {id(self):x}",
                       runner=self._run_in_container, classpath=self.classpath)

    def _run_in_container(self, node: LocalNode, cmd: list[str], name: str) -> tuple[int, str]:
        import docker
        home = str(node.home)
        try:
            output = self._client.containers.run(
                self.image, cmd, remove=True, network_mode="host", user=f"{os.getuid()}:{os.getgid()}",
                entrypoint=[], volumes={home: {"bind": home, "mode": "rw"}}, labels={LABEL: owner()},
                environment={"KAFKA_LOG4J_OPTS": ""}, stderr=True)
        except docker.errors.ContainerError as exc:
            return exc.exit_status, (exc.stderr or b"").decode(errors="replace")
        except docker.errors.APIError as exc:
            raise HarnessError(f"formatting storage of node {node.node_id} in {self.image}: {exc.explanation}") from None
        return 0, output.decode(errors="replace")

    def close(self) -> None:
        try:
            super().close()
        finally:
            try:
                sweep(self._client)  # containers of harness processes that are gone
            except Exception:  # the engine went away: the reaper has them registered
                pass


def _docker_name(text: str) -> str:
    """`text` in the alphabet of container names ([a-zA-Z0-9][a-zA-Z0-9_.-]*)."""
    clean = "".join(c if c.isalnum() or c in "_.-" else "-" for c in text)
    return clean.strip("-.") or "ksh"
