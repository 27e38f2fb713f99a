"""The versions a deviation or a known bug is known on: a row of the deviation and known-bug tables says from which
version it is known (`since`: the first the harness met it on), the newest it was seen on (`confirmed`) and, when
known, the first version without it (`fixed_in`) (issue 73).

A version under test falls in one of four places (`KnownRange.status`):

- "before": older than `since`: never met there, nothing is expected (the test runs plainly);
- "known": from `since` to `confirmed`, below `fixed_in`: expected, strict (a pass is news: a failure naming the
  row to update);
- "unconfirmed": newer than `confirmed`, below `fixed_in` (or no fix known): the expectation is kept, not strict
  ("known in 2.16.1, not yet confirmed on 2.16.2"): a release newer than the table never turns a known deviation
  into a failure, and a pass there is reported as one line naming the row, not as a failure;
- "fixed": at or past `fixed_in`: not expected.

Versions are spelled as the tables spell them (`version_key`): Kafka and Python releases ("4.3.1", "2.16.2",
PEP 440's "2.17.0rc1"), Go module versions ("v1.22.2") and Go pseudo-versions
("v0.0.0-20260918054303-01f206a7e32c", ordered as Go's semver orders them: by their timestamp). Pure: no import
beyond the standard library and `harness.errors`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.errors import HarnessError

BEFORE, KNOWN, UNCONFIRMED, FIXED = "before", "known", "unconfirmed", "fixed"
#: the statuses under which the deviation or bug is expected (strict only when KNOWN)
EXPECTED = (KNOWN, UNCONFIRMED)

#: an "x" part ("4.3.x"): the top of that line, above any release of it
_TOP = 1 << 62
_GO = re.compile(r"v(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z.-]+)?")
_PLAIN = re.compile(r"(\d+(?:\.\d+)*)(\.x)?(?:(a|b|rc)(\d+)|\.post(\d+)|\.dev(\d+))?")
#: where a version falls within its release: a .devN before its pre-releases, those before the release, a .postN after
_DEV, _PRE, _RELEASE, _POST = range(4)


def version_key(text: str) -> tuple:
    """An ordering key of a version as the tables spell it: "4.3.1" < "4.3.x" (the top of the 4.3 line) < "4.4.0";
    "2.17.0rc1" < "2.17.0"; "v0.0.0-20260515175617-8268a5d078c0" < "v0.0.0-20260918054303-01f206a7e32c" <
    "v1.22.2" (a Go pre-release sorts before its release, its identifiers compared numerically when numeric, else
    lexically). Trailing zero parts do not count ("4.3" == "4.3.0"). Anything else is a one-line HarnessError
    naming the spellings; it never guesses an order."""
    found = _GO.fullmatch(text) if isinstance(text, str) else None
    if found is not None:
        release = _release(int(part) for part in found.group(1, 2, 3))
        if found[4] is None:
            return release, _RELEASE, ()
        return release, _PRE, tuple((0, int(i)) if i.isdigit() else (1, i) for i in found[4].split("."))
    found = _PLAIN.fullmatch(text) if isinstance(text, str) else None
    if found is None:
        raise HarnessError(f"invalid version {text!r}: spell it as a release (4.3.1, 2.16.2, 2.17.0rc1; the top of a "
                           "line as 4.3.x), a Go module version (v1.22.2) or a Go pseudo-version "
                           "(v0.0.0-20260918054303-01f206a7e32c)")
    numbers, top, pre, pre_number, post, dev = found.groups()
    release = _release([*(int(part) for part in numbers.split(".")), *((_TOP,) if top else ())])
    if pre is not None:
        return release, _PRE, ((1, pre), (0, int(pre_number)))
    if post is not None:
        return release, _POST, ((0, int(post)),)
    if dev is not None:
        return release, _DEV, ((0, int(dev)),)
    return release, _RELEASE, ()


def _release(parts) -> tuple[int, ...]:
    parts = list(parts)
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def _is_go(text: str) -> bool:
    return text.startswith("v")


@dataclass(frozen=True)
class KnownRange:
    """The versions a row of a deviation or known-bug table is known on. `since`: the first version the harness met
    it on; `confirmed`: the newest it was seen on (an "x" part claims a whole line: "4.3.x"; prefer the version
    seen); `fixed_in`: the first version without it, when known (empty: no fix known). since <= confirmed <
    fixed_in, all spelled alike (Go's "v..." or not), else a one-line HarnessError at construction: a table that
    cannot be read never decides anything."""

    since: str
    confirmed: str
    fixed_in: str = ""

    def __post_init__(self) -> None:
        for field, value in (("since", self.since), ("fixed_in", self.fixed_in)):
            if value and _TOP in version_key(value)[0]:
                raise HarnessError(f"known range {self}: {field} {value} names a line's top; give the release itself "
                                   "(only confirmed may claim a whole line, as 4.3.x)")
        spelled = {_is_go(v) for v in (self.since, self.confirmed, self.fixed_in) if v}
        if len(spelled) > 1:
            raise HarnessError(f"known range {self}: spell since, confirmed and fixed_in alike (all Go module "
                               "versions v1.2.3, or all releases 1.2.3)")
        if version_key(self.since) > version_key(self.confirmed):
            raise HarnessError(f"known range {self}: since {self.since} is newer than confirmed {self.confirmed} "
                               "(since: the first version it was met on; confirmed: the newest it was seen on)")
        if self.fixed_in and version_key(self.fixed_in) <= version_key(self.confirmed):
            raise HarnessError(f"known range {self}: fixed_in {self.fixed_in} is not newer than confirmed "
                               f"{self.confirmed} (fixed_in: the first version without it)")

    def status(self, version: str) -> str:
        """Where `version` falls: BEFORE, KNOWN, UNCONFIRMED or FIXED (the module's docstring). A version not
        spelled as the range's (a Go module version for a range of releases) or not a version at all is a
        one-line HarnessError: it must not be taken for any place of the range."""
        key = version_key(version)
        if _is_go(version) != _is_go(self.since):
            raise HarnessError(f"version {version} is not spelled as the known range's ({self}): give the "
                               f"implementation's own version, as {self.since}")
        if self.fixed_in and key >= version_key(self.fixed_in):
            return FIXED
        if key < version_key(self.since):
            return BEFORE
        return KNOWN if key <= version_key(self.confirmed) else UNCONFIRMED

    def expects(self, version: str) -> bool:
        """Whether it is expected on `version`: known there, or newer than confirmed and not fixed."""
        return self.status(version) in EXPECTED

    @property
    def span(self) -> str:
        """The versions it was seen on: "2.16.1", or "4.1.2 to 4.4.0"."""
        return self.since if self.since == self.confirmed else f"{self.since} to {self.confirmed}"

    def on(self, version: str) -> str:
        """One line of what the range says of `version`: "known in 2.16.1, not yet confirmed on 2.16.2"."""
        status = self.status(version)
        if status == BEFORE:
            return f"not met before {self.since} (known in {self.span}), so not expected on {version}"
        if status == FIXED:
            return f"fixed in {self.fixed_in} (known in {self.span})"
        if status == UNCONFIRMED:
            return f"known in {self.span}, not yet confirmed on {version}"
        return f"known in {self.span}"

    def __str__(self) -> str:
        return f"known in {self.span}, " + (f"fixed in {self.fixed_in}" if self.fixed_in else "no fix known")
