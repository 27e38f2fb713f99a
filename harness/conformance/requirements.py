"""What a conformance test needs of the release under test (a release line, a group-level config)."""

from __future__ import annotations

from harness.kafka.versions import parse_version, release_line


def missing_requirement(version: str, line: str | None = None, group_config: str | None = None) -> str | None:
    """Why a test that needs release `line` (or later) and the group-level config `group_config`
    (a role of `harness.kafka.versions`) cannot run on Kafka `version`; None if it can."""
    if line and parse_version(version)[:2] < tuple(int(p) for p in line.split(".")):
        return f"needs Kafka {line} or later; the cluster runs {version}"
    if group_config and release_line(version).group_config(group_config) is None:
        return f"Kafka {version} has no group-level config for {group_config.replace('_', ' ')}"
    return None
