"""The Docker engine as the docker backend sees it: reachable or not, images present or not, and the
containers the harness labelled.

Every check fails with one line naming the fix (`HarnessError`), at the first moment it can be
known: `engine()` before anything starts, `require_image` before the first container. Every
container the harness creates carries `LABEL`, whose value names the harness process that made it
(`owner`: host and pid), so `sweep` can remove what a dead harness of this host left behind even
where testcontainers' own reaper (Ryuk) has no image, and never touches another host's.
"""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

from harness.errors import HarnessError

if TYPE_CHECKING:
    import docker

#: Every container of the harness carries this label; its value is `owner()` of the harness that made it.
LABEL = "org.kafka-share-harness"


def owner(pid: int | None = None) -> str:
    """The label value of containers made by harness process `pid` (default: this one) on this host."""
    return f"{socket.gethostname()}/{os.getpid() if pid is None else pid}"


#: Where the images are built (`.ci/run` and the README call it when an image is missing).
BUILD_COMMAND = "bash scripts/docker_images.sh"


def engine() -> "docker.DockerClient":
    """A client of the engine `DOCKER_HOST` (or the local socket) names, answering a ping."""
    try:
        import docker
    except ImportError:
        raise HarnessError("the docker backend needs the Python packages testcontainers and docker: "
                           "pip install -e '.[docker]' (scripts/install.sh does)") from None
    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except Exception as exc:  # docker.errors.DockerException, requests' errors: the engine does not answer
        where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        raise HarnessError(f"no Docker engine answers at {where} ({type(exc).__name__}): start one "
                           "(bash scripts/docker_engine.sh start: dockerd --bridge=none --iptables=false) "
                           "or set DOCKER_HOST") from None
    return client


def require_image(client: "docker.DockerClient", image: str) -> None:
    """The image is present locally (the harness never pulls during a run: a pull is a setup step)."""
    import docker
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        version = image.split(":", 1)[1] if image.startswith("apache/kafka:") else ""
        raise HarnessError(f"image {image} is not on this Docker engine: pull it (docker pull {image}) or "
                           f"build the harness's images ({BUILD_COMMAND}{' ' + version if version else ''})") from None


#: The layout check's script: constant text; the jar folder is its argument `$1`, never part of it
#: (a classpath such as `/x"; id; echo "` is a folder name that does not exist, not a command).
LAYOUT_SCRIPT = ('command -v java >/dev/null || exit 3; '
                 'for jar in "$1"/kafka_*.jar; do [ -f "$jar" ] && exit 0; done; exit 4')


def layout_command(classpath: str) -> list[str]:
    """The layout check's command (a list of arguments: no shell string is built from `classpath`)."""
    folder = classpath.rstrip("*").rstrip("/") or "/"
    return ["sh", "-c", LAYOUT_SCRIPT, "ksh-layout-check", folder]


def check_layout(client: "docker.DockerClient", image: str, classpath: str) -> None:
    """The image runs `java` and has Kafka's jars where `classpath` says (one short container)."""
    import docker
    command = layout_command(classpath)
    folder = command[-1]
    try:
        client.containers.run(image, command, remove=True, network_mode="none",
                              labels={LABEL: owner()}, entrypoint=[])
    except docker.errors.ContainerError as exc:
        missing = {3: "no `java` on its PATH", 4: f"no Kafka jars (kafka_*.jar) in {folder}"}.get(
            exc.exit_status, f"its layout check exited with {exc.exit_status}")
        raise HarnessError(f"image {image} does not fit the docker backend: {missing}; it needs java on the "
                           "PATH and Kafka's jars at --kafka-image-classpath (default /opt/kafka/libs/*)") from None


def sweep(client: "docker.DockerClient", pid: int | None = None) -> list[str]:
    """Remove the harness's containers of this host: those of harness process `pid`, or (None) those
    of every harness process of this host that no longer runs; the names removed."""
    removed = []
    host = socket.gethostname()
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        made_on, _, made_by = container.labels.get(LABEL, "").rpartition("/")
        if made_on != host or not made_by.isdigit():
            continue
        if (pid is not None and int(made_by) != pid) or (pid is None and _alive(int(made_by))):
            continue
        container.remove(force=True)
        removed.append(container.name)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
