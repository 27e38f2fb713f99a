"""One line when the harness fetches or builds something on first use (issue 73: the main job installs only its
own set; another Kafka release, a driver, the kfake launcher or the browser arrive when a test first needs them).

The line goes to standard error; under pytest the plugin routes it past output capture (`set_sink`), so a worker
fetching a release for its test says so in the session's log, not only in that test's captured output.
"""

from __future__ import annotations

import sys
import threading
from typing import Callable

_sink: Callable[[str], None] | None = None
_lock = threading.Lock()


def set_sink(sink: Callable[[str], None] | None) -> None:
    """Where `progress` writes (None: standard error)."""
    global _sink
    _sink = sink


def progress(line: str) -> None:
    """Say what is being fetched or built, and why it takes a while ("fetching Kafka 4.3.1's jars from Maven
    Central (first use; cached for later runs)")."""
    text = f"share-harness: {line}"
    with _lock:
        if _sink is not None:
            try:
                _sink(text)
                return
            except Exception:  # noqa: BLE001  (a sink that cannot write must not fail the fetch)
                pass
        print(text, file=sys.stderr, flush=True)
