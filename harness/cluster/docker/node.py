"""One node of a docker cluster: a container of the Kafka image running the same `kafka.Kafka` command
as a local node, and what can be done to it.

A `ContainerNode` is a `LocalNode` (same id, roles, home, config, ports) whose process is a container
made with testcontainers: on the host network, as the harness's own user, with the node's home
mounted at the same path (the rendered config, data and log paths mean the same inside and out).
Stop is the engine's stop (SIGTERM, then SIGKILL), kill is SIGKILL, pause is the engine's freezer.
Each start makes a new container (its data directory is the node's home, which outlives it); a
container that ends is removed after its output is appended to the node's `logs/stdout.log`.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from harness.cluster.docker.engine import LABEL, owner
from harness.cluster.local.node import LocalNode
from harness.cluster.plan import IMAGE_CLASSPATH
from harness.sys.procs import REAPER

if TYPE_CHECKING:
    import docker


def host_network_container(image: str, command: list[str], name: str, mounts: list[str]) -> Any:
    """A testcontainers `DockerContainer` (not started): host network, the harness's user, labelled,
    every path in `mounts` bound at the same path, the image's entrypoint replaced by `command`.

    testcontainers' reaper (Ryuk) removes the containers when this process dies, where its image is
    on the engine; where it is not (no registry to pull it from), it is disabled and the harness's
    own reaper (`harness.sys.reaper`, which every container is registered with) does that alone."""
    from testcontainers.core.config import testcontainers_config
    from testcontainers.core.container import DockerContainer

    if not testcontainers_config.ryuk_disabled and not _image_present(testcontainers_config.ryuk_image):
        testcontainers_config.ryuk_disabled = True
    container = DockerContainer(image).with_command(command).with_name(name)
    for path in mounts:
        container = container.with_volume_mapping(path, path, "rw")
    return container.with_kwargs(network_mode="host", user=f"{os.getuid()}:{os.getgid()}", entrypoint=[],
                                 labels={LABEL: owner()}, init=False)


def _image_present(image: str) -> bool:
    import docker
    try:
        docker.from_env(timeout=30).images.get(image)
    except docker.errors.ImageNotFound:
        return False
    return True


@dataclass
class ContainerNode(LocalNode):
    image: str = ""
    image_classpath: str = IMAGE_CLASSPATH
    name_prefix: str = "ksh"  # DockerCluster gives each cluster its own
    extra_mounts: list[str] = field(default_factory=list)  # more host folders at the same path (archives)
    _container: "docker.models.containers.Container | None" = field(default=None, repr=False)
    _exit: int | None = field(default=None, repr=False)
    _starts: int = field(default=0, repr=False)
    _guard: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def start(self, heap_mb: int, classpath: str, jvm_flags: Sequence[str] = ()) -> None:
        """A new container of the image (the host's `classpath` is not used: the image's jars are;
        `jvm_flags` are for the image's JVM, their files in `extra_mounts`)."""
        self._starts += 1
        name = f"{self.name_prefix}-n{self.node_id}-{self._starts}"
        command = self.java_command(heap_mb, self.image_classpath, jvm_flags)
        started = host_network_container(self.image, command, name, [str(self.home), *self.extra_mounts]).start()
        with self._guard:
            self._container, self._exit = started.get_wrapped_container(), None
        REAPER.register_container(self._container.id)

    def _state(self) -> dict:
        with self._guard:
            container = self._container
        if container is None:
            return {}
        try:
            container.reload()
        except Exception:  # removed meanwhile (docker.errors.NotFound), or the engine hiccuped
            return {}
        return container.attrs.get("State", {})

    def alive(self) -> bool:
        return self._state().get("Status") in ("running", "paused", "restarting")

    def pid(self) -> int | None:
        state = self._state()
        return state.get("Pid") or None if state.get("Status") in ("running", "paused") else None

    def terminate(self) -> None:
        """Ask the container to end (SIGTERM after unpausing) without waiting."""
        if self.alive():
            self._call("unpause_if_paused")
            self._call("kill", signal="SIGTERM")

    def stop(self, timeout: float = 30) -> None:
        if self._container is not None:
            self._call("unpause_if_paused")
            self._call("stop", timeout=int(max(1, timeout)))
            self._remove()

    def kill(self) -> None:
        if self._container is not None:
            self._call("unpause_if_paused")
            self._call("kill", signal="SIGKILL")
            self._call("wait", timeout=30)
            self._remove()

    def pause(self) -> None:
        self._call("pause")

    def resume(self) -> None:
        self._call("unpause_if_paused")

    def death(self) -> str | None:
        state = self._state()
        code = state.get("ExitCode") if state.get("Status") in ("exited", "dead") else self._exit
        if self._container is not None and not self.alive() and code is not None:
            return f"node {self.node_id} (container {self._container.name}) exited with code {code} (see {self.logs})"
        return None

    def _call(self, verb: str, **kwargs: Any) -> None:
        """A verb of the engine on the container; one that is gone or already in that state is no error."""
        import docker
        with self._guard:
            container = self._container
        if container is None:
            return
        try:
            if verb == "unpause_if_paused":
                container.reload()
                if container.status == "paused":
                    container.unpause()
            else:
                getattr(container, verb)(**kwargs)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            if exc.status_code != 409:  # 409: not running / already paused: the state the verb wanted
                raise

    def _remove(self) -> None:
        """Keep the container's exit code and output (in logs/stdout.log), then remove it."""
        import docker
        with self._guard:
            container = self._container
        if container is None:
            return
        try:
            container.reload()
            self._exit = container.attrs.get("State", {}).get("ExitCode")
            with open(self.logs / "stdout.log", "ab") as out:
                out.write(container.logs())
            container.remove(force=True)
        except docker.errors.NotFound:
            pass
        REAPER.forget_container(container.id)
