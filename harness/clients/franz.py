"""The franz-go share-consumer driver (harness/go/franzdriver, Go), built with `go build` at first use.

The driver implements the step behaviour of `docs/driver.md` with franz-go's share consumer
(`kgo.ShareGroup`, franz-go v1.21+; the version is pinned in its go.mod). It is compiled once per
source (a digest of main.go, go.mod and go.sum names the build) into the harness's cache, with the
normal Go module cache: offline once the modules are there, else through the Go module proxy.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from harness.clients.driver import StepDriver
from harness.history.store import HistoryWriter
from harness.sys.gobuild import GO_SOURCES, build_go
from harness.sys.paths import cache_dir

#: The driver's Go module.
SOURCE = GO_SOURCES / "franzdriver"

#: What the driver declares in its start event (docs/driver.md's vocabulary). franz-go has every
#: acknowledgement type (AckRenew: KIP-1222, Kafka 4.2+), explicit acknowledgement (Record.Ack) and
#: the accept-what-is-left behaviour of implicit mode (the next poll, or MarkAcks(AckAccept)), a
#: synchronous flush (FlushAcks: commit_sync), the background one (commit_async), the
#: acknowledgement callback (ShareAckCallback: per partition; the driver names the offsets) and
#: share.acquire.mode=record_limit (ShareMaxRecordsStrict).
FRANZ_FEATURES = ("ack:ACCEPT", "ack:RELEASE", "ack:REJECT", "ack:RENEW", "explicit", "implicit",
                  "commit_sync", "commit_async", "callback", "acquire_mode", "rack_id", "implicit_batch_held",
                  "subscribe_none")


#: builds the driver against another franz-go release than its go.mod pins (the drift job's newest, docs/drift.md)
VERSION_ENV = "KSH_FRANZ_GO_VERSION"


def pinned_franz_version(source: Path = SOURCE) -> str:
    """The franz-go version the driver's go.mod pins (e.g. v1.22.2)."""
    found = re.search(r"^\s*(?:require\s+)?github\.com/twmb/franz-go\s+(v\S+)", (source / "go.mod").read_text(),
                      re.MULTILINE)
    return found.group(1) if found else "unknown"


def franz_version(source: Path = SOURCE) -> str:
    """The franz-go version the driver runs: `KSH_FRANZ_GO_VERSION` when set, else the one its go.mod pins."""
    return os.environ.get(VERSION_ENV) or pinned_franz_version(source)


def build_franz_driver(cache: Path, source: Path = SOURCE) -> Path:
    """The driver binary for the current source, built with `go build` on first use (and whenever
    main.go, go.mod or go.sum change, or `KSH_FRANZ_GO_VERSION` names another release: `go get` first):
    `cache/go/franzdriver-<digest>/franzdriver`."""
    version = franz_version(source)
    pins = () if version == pinned_franz_version(source) else (f"github.com/twmb/franz-go@{version}",)
    return build_go(cache, source, "franzdriver", "the franz-go driver", ldflags=f"-s -w -X main.version={version}",
                    pins=pins, needs=f"Go 1.26+ (franz-go {version} needs it)")


class FranzStepDriver(StepDriver):
    """franz-go's share consumer in step mode (harness/go/franzdriver, built with `go build` at
    first use). `dist` is accepted for the registry's sake and unused: franz-go is not tied to the
    Kafka release under test."""

    def __init__(self, name: str, config: dict[str, Any], history: HistoryWriter, log_dir: Path,
                 dist=None) -> None:
        super().__init__(name, config, history, log_dir)
        self.dist = dist

    def command_line(self) -> list[str]:
        return [str(build_franz_driver(cache_dir())), json.dumps(self.config)]
