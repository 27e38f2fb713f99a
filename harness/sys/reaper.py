"""The reaper: kills process groups and deletes dirs left behind when the harness dies.

Started by `harness.sys.procs`; reads commands on stdin, one per line:
`pgid N`, `forget-pgid N`, `container ID`, `forget-container ID`, `dir PATH`,
`forget-dir PATH`. When stdin closes (the harness exited, cleanly or not) it
SIGKILLs the remaining groups, removes the remaining containers (the docker
backend's nodes) and then the remaining dirs. On a clean exit nothing is left registered, so
it does nothing. It must never kill a group it was not told about.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the harness, which cleans up
    groups: set[int] = set()
    dirs: set[str] = set()
    containers: set[str] = set()
    for raw in sys.stdin:
        verb, _, arg = raw.strip().partition(" ")
        if verb == "pgid":
            groups.add(int(arg))
        elif verb == "forget-pgid":
            groups.discard(int(arg))
        elif verb == "container":
            containers.add(arg)
        elif verb == "forget-container":
            containers.discard(arg)
        elif verb == "dir":
            dirs.add(arg)
        elif verb == "forget-dir":
            dirs.discard(arg)
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGCONT)
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    _remove_containers(containers)
    # Delete dirs only once their writers are gone, or a dying JVM could recreate files.
    deadline = time.monotonic() + 15
    while groups and time.monotonic() < deadline:
        groups = {g for g in groups if _group_alive(g)}
        time.sleep(0.05)
    for path in dirs:
        shutil.rmtree(path, ignore_errors=True)


def _remove_containers(ids: set[str]) -> None:
    """`docker rm -f` each container (through the docker SDK, else the CLI); never fails."""
    if not ids:
        return
    try:
        import docker
        client = docker.from_env(timeout=30)
        for container_id in ids:
            try:
                client.containers.get(container_id).remove(force=True)
            except docker.errors.NotFound:
                pass
    except Exception:  # no SDK, or the engine is not reachable through it: the CLI's turn
        import subprocess
        subprocess.run(["docker", "rm", "-f", *sorted(ids)], capture_output=True, timeout=60, check=False)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


if __name__ == "__main__":
    main()
