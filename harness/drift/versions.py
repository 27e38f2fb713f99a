"""Releases as the drift job orders them, and the rows of its "what moved" table (pure: no network).

A registry lists milestones, release candidates and pre-releases beside the releases ("4.2.0-M1", "4.1.0-RC1",
"v1.23.0-rc.1"); only final releases count as the newest. A part whose registry could not be asked is a row
whose newest is unknown (`Moved.newest` None, `why` naming the registry): never the tested version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from harness.tested_set import LOCK_PIN, canonical

#: a final release: dot-separated ASCII digits, an optional leading "v" (Go); `\d` would take "²"
_FINAL = re.compile(r"v?([0-9]+(?:\.[0-9]+)*)")


def final_key(version: str) -> tuple[int, ...] | None:
    """(4, 3, 2) for "4.3.2", (1, 22, 3) for "v1.22.3"; None for anything that is not a final release."""
    found = _FINAL.fullmatch(version.strip()) if isinstance(version, str) else None
    return tuple(int(part) for part in found.group(1).split(".")) if found else None


def line_of(version: str) -> str:
    """The release line of "4.3.2": "4.3"."""
    return ".".join(version.lstrip("v").split(".")[:2])


def newest(versions: Iterable[str], line: str | None = None) -> str | None:
    """The newest final release among `versions` (of `line` only, when given); None if there is none."""
    finals = [v for v in versions if final_key(v) is not None and (line is None or line_of(v) == line)]
    return max(finals, key=lambda v: final_key(v)) if finals else None  # type: ignore[arg-type, return-value]


@dataclass(frozen=True)
class Moved:
    """One row of "what moved": a part of the tested set, the version tested, the newest one found."""

    component: str
    tested: str  #: "-" when the tested set has none (a release line or a package the harness does not know)
    newest: str | None  #: None: not resolved (`why` says which registry, and why)
    why: str = ""

    @property
    def state(self) -> str:
        """"unresolved", "same", "moved" or "new" (the tested set has none)."""
        if self.newest is None:
            return "unresolved"
        if self.tested == "-":
            return "new"
        return "same" if self.newest == self.tested else "moved"


def single(component: str, tested: str, found: Sequence[str] | str) -> Moved:
    """The row of a part with one pinned version; `found` is the registry's versions, or why it was not read."""
    if isinstance(found, str):
        return Moved(component, tested, None, found)
    best = newest(found)
    if best is None:
        return Moved(component, tested, None, "the registry lists no final release")
    if final_key(tested) is not None and final_key(best) < final_key(tested):  # type: ignore[operator]
        return Moved(component, tested, None, f"the registry's newest final release, {best}, is older than the "
                                              f"pinned {tested}: its list is incomplete")
    return Moved(component, tested, best)


def latest(component: str, tested: str, found: Sequence[str] | str) -> Moved:
    """The row of a part pinned by a Go pseudo-version (a module without releases, as kfake): `found` is
    [what module@latest resolves to], or why it was not read."""
    if isinstance(found, str) or not found:
        return Moved(component, tested, None, found if isinstance(found, str) else "module@latest answered nothing")
    return Moved(component, tested, found[0])


def kafka(known: Sequence[str], supported: Sequence[str], found: Sequence[str] | str) -> list[Moved]:
    """A row per supported line (the newest release the harness knows of it against Maven Central's newest),
    and one per newer line Maven Central has that the harness does not support yet."""
    rows = []
    for line in supported:
        tested = newest(known, line) or "-"
        if isinstance(found, str):
            rows.append(Moved(f"Kafka {line}", tested, None, found))
        else:
            best = newest(found, line)
            rows.append(Moved(f"Kafka {line}", tested, best, "" if best else f"Maven Central lists no {line} release"))
    if not isinstance(found, str) and supported:
        top = max(final_key(line) or () for line in supported)
        later = sorted({line_of(v) for v in found if final_key(v) is not None and (final_key(line_of(v)) or ()) > top},
                       key=lambda line: final_key(line) or ())
        rows += [Moved(f"Kafka {line} (a line the harness does not support yet)", "-", newest(found, line))
                 for line in later]
    return rows


def lock_pins(text: str) -> dict[str, tuple[str, ...]]:
    """{distribution: its pins} of a uv lock file, markers kept ("6.168.5 (python_full_version < '3.11')"): the
    lock is universal, so one package may be pinned once per interpreter range."""
    pins: dict[str, list[str]] = {}
    for raw in text.splitlines():
        found = LOCK_PIN.match(raw)
        if found:
            name, version, marker = found.groups()
            pins.setdefault(canonical(name), []).append(f"{version} ({marker})" if marker else version)
    return {name: tuple(sorted(versions)) for name, versions in pins.items()}


def python(tested_lock: str, newest_lock: str | None, why: str = "") -> list[Moved]:
    """A row per Python distribution whose pins differ between the tested lock and the newest resolution (one
    that appears or disappears included), and one row counting those that did not move; with no newest lock
    (`why`: the resolution's failure) one unresolved row."""
    tested = lock_pins(tested_lock)
    if newest_lock is None:
        return [Moved(f"Python packages ({len(tested)} locked)", "harness/lock/requirements.txt", None, why)]
    latest = lock_pins(newest_lock)
    if not latest:
        return [Moved(f"Python packages ({len(tested)} locked)", "harness/lock/requirements.txt", None,
                      "the newest resolution pins no package")]
    rows = [Moved(f"Python {name}", ", ".join(tested.get(name, ())) or "-", ", ".join(latest.get(name, ())) or
                  "(no longer required)") for name in sorted(set(tested) | set(latest))
            if tested.get(name) != latest.get(name)]
    same = sum(1 for name in tested if tested[name] == latest.get(name))
    return rows + [Moved(f"Python: {'the other' if rows else 'all'} {same} locked packages", "as locked", "as locked")]
