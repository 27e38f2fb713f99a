"""Where the harness keeps things: a per-user cache outside the repo, and run directories."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The download/build cache (Kafka jars, Toxiproxy); `KSH_CACHE_DIR` overrides it.

    Must not point inside a repository checkout: caches outlive clones.
    """
    env = os.environ.get("KSH_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kafka-share-harness"
